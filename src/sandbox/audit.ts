/**
 * Whether this kernel would log Landlock's denials to the audit subsystem (Landlock ABI 7 logs
 * each denied access there, naming the path or port, when audit is enabled): probed by asking
 * the audit netlink socket for its status (AUDIT_GET), never by turning audit on, which is the
 * machine's own setting. `cxagent check` says which way it names denied accesses.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_AUDIT = 9;
const AUDIT_GET = 1000;
const NLM_F_REQUEST = 1;
const MSG_DONTWAIT = 0x40;

export type AuditProbe = { on: true } | { on: false; why: string };

/** Probes once: on only when Landlock logs denials (ABI 7 or later) and the kernel's audit is enabled. */
export function landlockAudit(abi: number): AuditProbe {
  if (process.platform !== "linux") return { on: false, why: `${process.platform} has no Landlock` };
  if (abi < 7) return { on: false, why: `Landlock logs denials from ABI 7 (Linux 6.15); this kernel offers ${abi === 0 ? "no Landlock" : `ABI ${abi}`}` };
  const c = dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    send: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64 },
    recv: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  });
  try {
    const fd = c.symbols.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
    if (fd < 0) return { on: false, why: "the audit netlink socket cannot be opened here (no audit in this kernel, or not permitted)" };
    try {
      const request = new Uint8Array(16);
      const head = new DataView(request.buffer);
      head.setUint32(0, 16, true);
      head.setUint16(4, AUDIT_GET, true);
      head.setUint16(6, NLM_F_REQUEST, true);
      head.setUint32(8, 1, true);
      if (Number(c.symbols.send(fd, ptr(request), 16, 0)) < 0) return { on: false, why: "the audit status could not be asked for" };
      const reply = new Uint8Array(8192);
      // The kernel sends the reply from a thread of its own (audit_send_reply): it may take a moment.
      let n = -1;
      for (let waited = 0; n < 0 && waited < 500; waited += 5) {
        n = Number(c.symbols.recv(fd, ptr(reply), reply.length, MSG_DONTWAIT));
        if (n < 0) Bun.sleepSync(5);
      }
      const view = new DataView(reply.buffer);
      for (let at = 0; at + 16 <= n; ) {
        const length = view.getUint32(at, true);
        if (view.getUint16(at + 4, true) === AUDIT_GET && at + 24 <= n) {
          return view.getUint32(at + 20, true) === 1 ? { on: true } : { on: false, why: "the kernel's audit is disabled (auditctl -e 1 turns it on, for the whole machine)" };
        }
        if (length < 16) break;
        at += (length + 3) & ~3;
      }
      return { on: false, why: "the audit status could not be read" };
    } finally {
      c.symbols.close(fd);
    }
  } finally {
    c.close();
  }
}
