// Required only inside the compiled binary (native-launcher.ts), which carries the launcher in its own file system.
import launcher from "../../ffi/build/cxagent-sandbox.bin" with { type: "file" };

export default launcher;
