// Imported only inside the compiled binary, which carries these files in its own file system.
import library from "../../ffi/build/cxagent_shim.so" with { type: "file" };
import source from "../../ffi/build/cxagent_shim.c" with { type: "file" };

export default { library, source };
