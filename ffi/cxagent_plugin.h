/*
 * cxagent_plugin.h -- the native plugin ABI of cxagent, contract 4.
 *
 * This header is the whole interface between cxagent and a native plugin.
 * A plugin is a shared library (.so, .dylib or .dll), written in any language
 * that can export C functions, that defines the functions declared below and
 * ships beside a JSON file describing itself. Include this header in the file
 * that defines the exports, so the compiler checks your signatures against it.
 *
 * The header depends on <stdint.h> alone and compiles as C99, C11 and C++.
 *
 * ==========================================================================
 * OVERVIEW
 * ==========================================================================
 *
 * Lifecycle
 * ---------
 * The host calls the exports in this order:
 *
 *   1. cxagent_plugin_abi_version()   once; the handshake (see below)
 *   2. cxagent_plugin_describe()      once; the manifest
 *   3. cxagent_plugin_attach(host)    once, only if exported
 *   4. cxagent_plugin_start(context)  once; open connections, spawn backends
 *   5. any number of cxagent_plugin_invoke, cxagent_plugin_gate,
 *      cxagent_plugin_poll and cxagent_plugin_command calls, overlapping
 *   6. cxagent_plugin_stop()          once; release what start acquired
 *
 * cxagent_plugin_free is called after every export that returned a non-NULL
 * string, at any point in that sequence.
 *
 * Nothing runs until the user has approved the plugin: the host hashes the
 * folder the library was found in (the "load set"; the library, its sidecar,
 * its README and everything else in that folder) and maps no byte of the
 * library before a person has approved that exact hash. Any change to a file in
 * the folder asks the user again.
 *
 * Process model
 * -------------
 * Each plugin runs in a host subprocess of its own, never shared with another
 * plugin. If the plugin crashes (a segfault, abort(), exit(), an uncaught
 * exception), that subprocess dies and every call pending in it fails with
 * the cause; the agent's session carries on without the plugin. A crash
 * therefore costs calls, not the session. Repeated crashes (currently 3
 * within 5 minutes) quarantine the plugin for the rest of the session.
 *
 * The host subprocess talks to its parent over private copies of its stdin
 * and stdout. Before it loads your library it points file descriptor 1 at
 * standard error and descriptor 0 at /dev/null, so printf, puts and std::cout
 * are safe: they cannot corrupt the protocol, and what they print ends up in
 * the plugin's log, attributed to the plugin by name. The same goes for
 * anything written to stderr. Processes you start inherit neither protocol
 * descriptor (every descriptor of the host above 2 is close-on-exec). Do not
 * close or reopen descriptors 0, 1 or 2.
 *
 * The host process runs your library with less than it was started with:
 * it is non-dumpable (PR_SET_DUMPABLE 0, as the parent cxagent process is),
 * and it has dropped CAP_SYS_PTRACE from every capability set, the bounding
 * set included, so neither your code nor a program it runs can take
 * descriptors from the parent or another plugin's host (pidfd_getfd,
 * /proc/<pid>/fd), attach a debugger to them, or dump core. A plugin that
 * needs to ptrace something else cannot do it from the host.
 *
 * The bytes that run are the bytes the user approved: the host reads the
 * library once, hashes it, and loads it from a sealed in-memory copy of those
 * bytes. Libraries it needs from its own folder are loaded the same way, from
 * sealed copies, before it (see "Shipping libraries your plugin needs").
 * dladdr therefore names no file of yours, and the dynamic loader sees
 * /proc/self/fd, not your folder, as the library's $ORIGIN.
 *
 * The library is loaded once per process. Calls arrive on the threads of a
 * worker pool, all bound to that one instance, so static variables are shared
 * by every call. Quick calls are usually served one after another on one
 * thread; a call that runs longer than about a millisecond lets the next ones
 * start on other threads, so several calls run at once. Any static state that
 * changes after start needs a lock or atomics.
 *
 * Strings and JSON
 * ----------------
 * Every string in either direction is NUL-terminated UTF-8. The context,
 * the call arguments and every string a plugin returns are JSON documents;
 * tool and command names and the text typed after a command are plain text,
 * and the handshake is a bare integer. Arguments the host passes are never
 * NULL unless a function's comment says otherwise. JSON you return
 * must be valid (escape quotes, backslashes and control characters inside
 * strings; emit no NaN or Infinity, which JSON cannot represent).
 *
 * Ownership
 * ---------
 * One rule covers every pointer: whoever allocated a string frees it, with its
 * own allocator.
 *
 *   - Pointers the host passes in (context_json, tool_name, call_json,
 *     arguments, the host table) belong to the host. They are valid only until
 *     the function they were passed to returns. Copy anything you need later.
 *     (The host table itself is the exception: it stays valid until stop
 *     returns.)
 *   - Strings the plugin returns belong to the plugin. The host copies the
 *     bytes and then calls cxagent_plugin_free on the pointer, exactly once,
 *     for every non-NULL pointer any export returned, even when it could not
 *     parse the text. So every returned pointer must be one that your own
 *     cxagent_plugin_free can release: allocate a fresh copy for each return
 *     (malloc in C, CString::into_raw in Rust, and so on). Never return a
 *     string literal, a static or stack buffer, or a pointer you returned
 *     before that has not been freed yet.
 *
 * What NULL means
 * ---------------
 * NULL is an answer from some exports and a failure from others:
 *
 *   describe, start, invoke, stop   never NULL; NULL is reported as a failure
 *   gate                            NULL = "no prompt needed" (never an error)
 *   poll                            NULL = "nothing to submit" (the usual case)
 *   command                         NULL = "ran, and has nothing to say"
 *   host->current_call()            NULL = "not inside a call on this thread"
 *   call_id passed to the host      NULL = "the call running on this thread"
 *
 * The sidecar
 * -----------
 * Beside the library ships "<stem>.plugin.json", where <stem> is the library
 * path without its last extension: calculator.so pairs with
 * calculator.plugin.json. The host reads the sidecar before running any plugin
 * code, so a user can see what the plugin claims before trusting it. After
 * cxagent_plugin_describe returns, the host compares the two and refuses the
 * load at the first disagreement, naming it. Compared are pluginContract,
 * name, version, instructions, spawns, client, the set of tool names, each
 * tool's description, gated, alwaysAskable and inputSchema, and the commands.
 * Comparison is structural: key order and whitespace do not matter, array
 * order does. The easiest way to stay in step is to keep the manifest in one
 * place in your source and write the sidecar from it (or the other way round).
 *
 * Loading, and missing exports
 * ----------------------------
 * Exports are looked up by name at load time, not linked. A library that lacks
 * any of the seven mandatory exports (abi_version, describe, start, invoke,
 * gate, stop, free) is refused, and the error names every missing export, not
 * only the first. The optional exports (poll, command, attach) are detected by
 * their presence: leaving one out is never a load error, and a plugin that
 * exports one gets the behaviour whatever contract number it reports.
 *
 * On Windows every export needs __declspec(dllexport), and on other systems a
 * library built with -fvisibility=hidden exports nothing unless told to. The
 * CXAGENT_PLUGIN_EXPORT macro on each declaration below takes care of both;
 * put it on your definitions too if they are not preceded by this header.
 *
 * Shipping libraries your plugin needs
 * ------------------------------------
 * A library your plugin links (DT_NEEDED) is either a system library or ships
 * inside the plugin's folder; nothing else is loaded. Before any process
 * exists, cxagent reads the ELF dynamic section of your library and of each
 * library it ships, finds each needed library the way glibc's loader would
 * (DT_RPATH when there is no DT_RUNPATH, LD_LIBRARY_PATH, DT_RUNPATH, the
 * loader's cache, its default folders; $ORIGIN is the folder the file is in),
 * and sorts what it finds into three kinds:
 *
 *   - in the plugin's folder: hashed with it, then loaded by the plugin host
 *     from a sealed copy of the hashed bytes, before the library that needs
 *     it. The loader matches the need to that copy by its soname, so the
 *     library's DT_SONAME must equal the name it is needed by;
 *   - a system library (a default folder such as /usr/lib, or one the loader's
 *     cache covers, such as libstdc++.so.6 or libgcc_s.so.1): loaded as usual;
 *   - anything else is refused, naming your library, the dependency and the
 *     path it would come from. So is a folder your RPATH or RUNPATH names by
 *     path (not through $ORIGIN) outside the plugin's folder and outside the
 *     system's, if the loader would search it before the system's folders: a
 *     file put there after approval would run unapproved.
 *
 * To ship a library beside your plugin, give it a soname and link your plugin
 * with a RUNPATH of $ORIGIN:
 *
 *     cc -shared -fPIC -Wl,-soname,libfoo.so -o libfoo.so foo.c
 *     cc -shared -fPIC -o myplugin.so myplugin.c -L. -lfoo -Wl,-rpath,'$ORIGIN'
 *
 * A library in a subfolder works too ($ORIGIN/lib), and so do libraries that
 * need each other in a chain; a cycle does not. Rust: a cdylib needs only
 * system libraries unless you link others; for one you ship, add the linker
 * argument -Wl,-rpath,$ORIGIN (-C link-arg=...). CMake: set INSTALL_RPATH to
 * $ORIGIN and BUILD_WITH_INSTALL_RPATH, so no absolute build folder stays in
 * the RUNPATH.
 * $LIB and $PLATFORM are not resolved, and a library loaded by path in
 * DT_NEEDED (one with a '/') cannot come from the folder. Libraries you
 * dlopen() yourself at run time are your code's choice, not the loader's, and
 * are not checked. examples/slugger ships libslug.so this way.
 *
 * The handshake
 * -------------
 * cxagent_plugin_abi_version() reports the contract the plugin was written
 * for. The host accepts any value from CXAGENT_PLUGIN_CONTRACT_OLDEST to its own
 * CXAGENT_PLUGIN_CONTRACT, inclusive. A higher value is refused, because the
 * plugin may rely on something this host has never heard of; a lower one is
 * refused, because contract 1 had no gate and its tools would run without
 * their permission check. Both refusals state the plugin's number and the
 * accepted range. The manifest repeats the number as "pluginContract"; it must
 * equal the handshake value, or the load is refused as a manifest error that
 * names both numbers. The host tells the plugin its own contract in the start
 * context ("hostContract") and in the host table, so a plugin that needs a
 * newer host can refuse from start.
 *
 * Threads, at a glance
 * --------------------
 *   - abi_version, describe, attach, start and stop: called once each, in the
 *     lifecycle order above, never concurrently with one another.
 *   - invoke, gate and command: may run concurrently with themselves and with
 *     each other, on different threads, from start's successful return on. One
 *     exception, kept for plugins written to the older promise: a plugin that
 *     reports contract 2 or 3 never has cxagent_plugin_command called while
 *     another call of it runs (its invoke and gate may still overlap it).
 *   - poll: runs on a thread of its own, concurrently with invoke, gate and
 *     command, but never concurrently with itself.
 *   - free: may be called on any thread, concurrently with anything, and not
 *     necessarily on the thread that produced the pointer.
 *   - host table functions: callable from any thread, including threads the
 *     plugin created, from the moment attach is entered until stop returns.
 * Beyond that, never assume two calls are serialized, or that a call returns on the thread
 * that will make the next one.
 *
 * Cancellation
 * ------------
 * A native call cannot be interrupted. When the user presses Ctrl-C, a caller
 * cancels, or a caller-given timeout expires, the host fails that call on its
 * side at once ("cancelled" or "timed out") and stops waiting for it. Your
 * function keeps running until it returns by itself; its reply is then freed
 * and discarded, and its late progress, log and stream reports are dropped.
 * The worker pool grows to keep serving other calls, up to a cap. If your tool
 * can run for a long time, keep each call bounded, or offer your own tool that
 * sets a flag your long call checks between steps. Because an abandoned call
 * may still be running, stop can be called while it is: do not tear down state
 * that such a call may still touch without synchronising with it.
 *
 * Never
 * -----
 *   - return a string literal, a static or stack buffer, or any pointer your
 *     own cxagent_plugin_free cannot release;
 *   - let a C++ exception, a Rust panic, a Go panic or a longjmp leave an
 *     export or a callback (catch everything at the boundary, then return an
 *     {"ok":false,...} envelope);
 *   - return NULL from an export for which NULL is not an answer, or use NULL
 *     from gate to signal an error;
 *   - block for long in gate: the host abandons a gate after 500 ms and then
 *     asks the user with a generic wording and no "Always" option;
 *   - keep a host-owned pointer after the call it was passed to has returned;
 *   - call a host table function after cxagent_plugin_stop has returned (join
 *     or silence your own threads inside stop);
 *   - assume calls are serialized;
 *   - read stdin, or close or reopen the standard descriptors; call exit()
 *     or abort() to report an error (that is a crash: use "ok": false).
 *
 * Checking a plugin
 * -----------------
 * cxagent check <plugin> holds a built plugin to these rules and names each
 * breach with its fix: every mandatory export exported; the sidecar valid and
 * equal to describe; each string returned a fresh heap allocation (not a
 * literal, a static or stack buffer, or one already returned) that
 * cxagent_plugin_free really releases; each tool answering a valid envelope,
 * with output.content, to arguments made from its inputSchema (its "examples"
 * first) and a clean failure to missing or mistyped ones; gate fast and
 * answering NULL or a display; calls at once answering as calls one at a time;
 * start with empty and with bad settings; stop after a start, without one and
 * after a failed one; processes declared and registered; poll, command and the
 * host table used as described here. It calls every tool, gated ones too.
 *
 * A minimal plugin
 * ----------------
 * hello.c, built with  cc -shared -fPIC -I <dir of this header> -o hello.so hello.c
 *
 *   #include <stdlib.h>
 *   #include <string.h>
 *   #include "cxagent_plugin.h"
 *
 *   static const char MANIFEST[] =
 *       "{\"pluginContract\":4,\"name\":\"hello\",\"version\":\"1.0.0\","
 *       "\"tools\":[{\"name\":\"hello_say\",\"description\":\"Says hello.\","
 *       "\"inputSchema\":{\"type\":\"object\"}}]}";
 *
 *   static const char* copy(const char* s)
 *   {
 *       size_t n = strlen(s) + 1;
 *       char* p = (char*)malloc(n);
 *       if (p != NULL) memcpy(p, s, n);
 *       return p;
 *   }
 *
 *   int32_t cxagent_plugin_abi_version(void) { return 4; }
 *   const char* cxagent_plugin_describe(void) { return copy(MANIFEST); }
 *   const char* cxagent_plugin_start(const char* context_json)
 *   {
 *       (void)context_json;
 *       return copy("{\"ok\":true}");
 *   }
 *   const char* cxagent_plugin_invoke(const char* tool_name, const char* call_json)
 *   {
 *       (void)call_json;
 *       if (strcmp(tool_name, "hello_say") != 0)
 *           return copy("{\"ok\":false,\"error\":\"hello: unknown tool\"}");
 *       return copy("{\"ok\":true,\"result\":{\"success\":true,"
 *                   "\"output\":{\"content\":\"Hello!\"}}}");
 *   }
 *   const char* cxagent_plugin_gate(const char* tool_name, const char* call_json)
 *   {
 *       (void)tool_name; (void)call_json;
 *       return NULL;
 *   }
 *   const char* cxagent_plugin_stop(void) { return copy("{\"ok\":true}"); }
 *   void cxagent_plugin_free(const char* ptr) { free((void*)ptr); }
 *
 * hello.plugin.json, next to hello.so, holds the same JSON as MANIFEST.
 *
 * Language notes
 * --------------
 * A library's file name decides its sidecar's: "<library stem>.plugin.json",
 * the stem being the file name without its last extension. Toolchains that add
 * a "lib" prefix (cargo, and many shared-library Makefiles) produce
 * libhello.so, which pairs with libhello.plugin.json and is found by the name
 * "libhello". Copy the library to hello.so instead, beside hello.plugin.json,
 * in a folder that holds only what the plugin ships. That folder is the load
 * set and is hashed file by file, so a build tree or a .git folder inside it
 * makes every load slow to check and every build or commit ask the user again.
 *
 *   C     Include this header in the file that defines the exports. Its
 *         declarations carry CXAGENT_PLUGIN_EXPORT, so the definitions need
 *         none of their own and -fvisibility=hidden cannot hide them. Build
 *         with  cc -shared -fPIC -I <dir of this header> -o hello.so hello.c
 *         (and -pthread if the plugin starts threads). Name the library
 *         hello.dylib on macOS and hello.dll on Windows; the sidecar stays
 *         hello.plugin.json.
 *
 *   C++   Include this header too: its extern "C" block gives each definition
 *         whose signature matches a declaration C linkage, so its name is not
 *         mangled. A definition whose parameter types differ (char* where the
 *         header has const char*, say) is a different C++ function: it
 *         compiles, gets a mangled name, and the load reports that export as
 *         missing. Catch every exception inside each export (catch (...)) and
 *         answer an {"ok":false,...} envelope. Return a fresh copy, such as
 *         strdup(s.c_str()) released with free() in cxagent_plugin_free, never
 *         the c_str() of a std::string that still owns it.
 *
 *   Rust  Build a cdylib (crate-type = ["cdylib"] in Cargo.toml) and write
 *         each export as
 *             #[unsafe(no_mangle)]
 *             pub extern "C" fn cxagent_plugin_stop() -> *const c_char
 *         Edition 2024, the default of cargo new, refuses a plain
 *         #[no_mangle] ("unsafe attribute used without unsafe"); edition 2021
 *         takes #[no_mangle], and #[unsafe(no_mangle)] as well since Rust
 *         1.82. A cdylib exports only such functions. Keep the header's
 *         types: int32_t is i32, int64_t is i64, uint32_t is u32, const char*
 *         is *const c_char (std::ffi::c_char); cxagent_host is a #[repr(C)]
 *         struct with the same fields in the same order, its function
 *         pointers Option<unsafe extern "C" fn(...)>. Copy each argument
 *         (CStr::from_ptr) before the export returns. Return
 *         CString::into_raw() and take it back in cxagent_plugin_free with
 *         CString::from_raw(). A panic that reaches an extern "C" boundary
 *         aborts the process (Rust 1.81 and later), which costs the call: run
 *         each export's body under std::panic::catch_unwind, keeping the
 *         default panic = "unwind", and answer {"ok":false,...}. cargo writes
 *         target/release/libhello.so (libhello.dylib on macOS, hello.dll on
 *         Windows): build with --target-dir (or CARGO_TARGET_DIR) outside the
 *         plugin's folder and copy the library to hello.so beside
 *         hello.plugin.json. examples/wordcount in the cxagent repository is
 *         a whole plugin written this way, and cxagent new hello --lang rust
 *         starts one.
 *
 *   Go    (Not tried with this host; this is what Go's documentation says.)
 *         Build a main package with cgo:  go build -buildmode=c-shared
 *         -o hello.so  (the -o name is the library's, no prefix added). The
 *         file with the exports imports "C", and an //export comment names
 *         each one:
 *             //export cxagent_plugin_stop
 *             func cxagent_plugin_stop() *C.char { ... }
 *         with C types in the signatures (*C.char; C.int32_t and C.int64_t
 *         once the preamble includes <stdint.h>). Do not include this header
 *         in that file's preamble: the preamble of a file with //export may
 *         hold declarations only, and cgo declares the exports itself, with
 *         char* where this header has const char*. Return C.CString(s), a
 *         copy in C's malloc memory, and release it in cxagent_plugin_free
 *         with C.free(unsafe.Pointer(p)) (the preamble includes <stdlib.h>
 *         for it); never return a pointer to Go memory. Copy arguments with
 *         C.GoString. Go cannot call a C function pointer, so call the host
 *         table's functions through small C helpers defined in the preamble
 *         of another file. The Go runtime initialises when the library is
 *         loaded, installing its own handlers for SIGSEGV, SIGBUS and SIGFPE,
 *         and runs goroutines on threads of its own besides the host's. An
 *         unrecovered Go panic ends the process: recover() in a deferred
 *         function in each export and answer {"ok":false,...}.
 */

#ifndef CXAGENT_PLUGIN_H
#define CXAGENT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * CXAGENT_PLUGIN_EXPORT marks a function as exported from the shared library.
 * Define it yourself before including this header to override it.
 */
#ifndef CXAGENT_PLUGIN_EXPORT
#  if defined(_WIN32)
#    define CXAGENT_PLUGIN_EXPORT __declspec(dllexport)
#  elif defined(__GNUC__) || defined(__clang__)
#    define CXAGENT_PLUGIN_EXPORT __attribute__((visibility("default")))
#  else
#    define CXAGENT_PLUGIN_EXPORT
#  endif
#endif

/*
 * The contract this header describes, and the oldest contract a host built
 * from it still loads. Contract 2 added the gate, 3 the optional poll and
 * command exports, 4 the optional attach export and the host table.
 */
#define CXAGENT_PLUGIN_CONTRACT 4
#define CXAGENT_PLUGIN_CONTRACT_OLDEST 2

/* Levels for cxagent_host.log. */
#define CXAGENT_LOG_TRACE 0
#define CXAGENT_LOG_DEBUG 1
#define CXAGENT_LOG_INFO 2
#define CXAGENT_LOG_WARN 3
#define CXAGENT_LOG_ERROR 4
#define CXAGENT_LOG_CRITICAL 5

/* A percent value for cxagent_host.progress meaning "busy, no estimate". */
#define CXAGENT_PROGRESS_BUSY (-1)

/*
 * ==========================================================================
 * THE HOST TABLE (contract 4)
 * ==========================================================================
 *
 * Passed to cxagent_plugin_attach, if the plugin exports it. It lets code
 * running inside a call report progress, write to the log, and stream partial
 * output, and lets the plugin register the processes it starts.
 *
 * The table and its functions are owned by the host and stay valid from the
 * moment attach is entered until cxagent_plugin_stop returns; keep the pointer
 * and call through it. Do not write to it.
 *
 * Every function in it:
 *   - may be called from any thread: a thread inside invoke or command, the
 *     poll thread, or a thread the plugin created itself;
 *   - may be called concurrently with itself and with the others;
 *   - copies its string arguments before returning, so a stack buffer or a
 *     string you free right afterwards is fine to pass;
 *   - accepts text as NUL-terminated UTF-8 (plain text, not JSON);
 *   - returns quickly (register_child takes a little longer, because the
 *     child is recorded durably before it returns);
 *   - must not be called after cxagent_plugin_stop has returned.
 *
 * Calls may overlap, so each report names the call it belongs to. A call_id is
 * the decimal request id the host assigned to an invoke or command, as
 * returned by current_call(). Passing NULL means "the call running on this
 * thread", which is always right inside invoke and command themselves. A
 * thread of your own has no current call: copy the id from current_call()
 * while still inside invoke, hand the copy to the thread, and pass it
 * explicitly.
 *
 * Reports for a call reach the parent before that call's reply. A report whose
 * call has already returned, or was abandoned, is dropped, so a late report can
 * never attach itself to a different call. A report that names no call (NULL
 * outside a call, for instance during start, gate or poll) is dropped, except
 * for log, which then goes to the plugin's own log. A report the host cannot
 * place costs that report only; none of these functions fails the call.
 *
 * Fields are only ever appended, never reordered or removed. "size" says how
 * many bytes of the table the host filled in; before using a field added after
 * contract 4, check that it lies within size, for example with
 * CXAGENT_HOST_HAS_FIELD below. Every function field that lies within size is a
 * valid, non-NULL function pointer.
 */
typedef struct cxagent_host {
    /*
     * sizeof(cxagent_host) as the host compiled it. Never read a field that
     * does not lie entirely within this many bytes.
     */
    uint32_t size;

    /*
     * The contract the host implements (CXAGENT_PLUGIN_CONTRACT of its build).
     * The same number arrives as "hostContract" in the start context.
     */
    int32_t contract;

    /*
     * progress: how far the call has got.
     *   Optional to use; available since contract 4.
     *   call_id  NULL for the call on this thread, or an id from current_call().
     *   percent  0..100, or CXAGENT_PROGRESS_BUSY (-1) for "working, no
     *            estimate". Other values may be clamped or dropped.
     *   text     a short line for the user (for example "indexing 40 of 90
     *            files"), or NULL for none. Copied before returning.
     * Shown on the user's terminal while the call runs. Dropped if the call
     * has already returned or no call is named.
     */
    void (*progress)(const char* call_id, int32_t percent, const char* text);

    /*
     * log: one line for the log.
     *   Optional to use; available since contract 4.
     *   call_id  NULL for the call on this thread, or an id from current_call().
     *            When no call is named (outside a call, with NULL), the line
     *            still goes to the plugin's own log instead of being dropped,
     *            so log is also the way to report from start, stop, gate, poll
     *            and background threads.
     *   level    CXAGENT_LOG_TRACE (0) .. CXAGENT_LOG_CRITICAL (5).
     *   text     the message, without a trailing newline. Copied before
     *            returning.
     * Prefer this to printf: the line carries its level and its call.
     */
    void (*log)(const char* call_id, int32_t level, const char* text);

    /*
     * stream: a piece of the call's output, as it is produced.
     *   Optional to use; available since contract 4.
     *   call_id  NULL for the call on this thread, or an id from current_call().
     *   text     the next chunk of text, appended to what was streamed before;
     *            it need not end at a line break. Copied before returning.
     * Streaming is for the user's benefit while a call is running. It does not
     * replace the result: put the complete text the model should read in the
     * result's output.content as well. Dropped if the call has already
     * returned or no call is named.
     */
    void (*stream)(const char* call_id, const char* text);

    /*
     * current_call: the id of the call running on the calling thread.
     *   Optional to use; available since contract 4.
     * Returns the request id of the invoke or command this thread is executing,
     * as a decimal string, or NULL when the thread is not inside one (inside
     * start, stop, gate or poll, and on threads the plugin created).
     * The string belongs to the host and stays valid only until the current
     * call returns. Do not free it. To report from another thread, copy it
     * (strdup or a fixed buffer: ids are short) before invoke returns.
     */
    const char* (*current_call)(void);

    /*
     * register_child: tell the host about a process the plugin started.
     *   Optional to use; available since contract 4. A plugin that starts
     *   processes should also declare "spawns": true in its manifest, which
     *   the approval prompt shows to the user.
     *   pid  the child's process id. Values <= 0 are ignored.
     * Call it immediately after the process is created (after fork or
     * posix_spawn, CreateProcess and so on returns), before any handshake or
     * wait on the child. A child that starts and then fails to initialise
     * still needs cleaning up, and registering it only after a successful
     * handshake would miss exactly that case.
     *
     * What is accepted. The cxagent process itself (not the plugin host, and
     * never on the plugin's word) reads /proc the moment the registration
     * arrives, and records the process only if it is this plugin host's
     * descendant: its chain of parent pids leads to the plugin host, or it is
     * still in the plugin host's session (so a grandchild whose parent has
     * already exited is accepted as long as it has not called setsid). It
     * records the pid, the start time, the process group and the session it
     * reads there, and whether the process led its own group at that moment.
     * What is refused. pid 1 (and 0 or less), the plugin host itself (it is
     * recorded already), the cxagent process and its ancestors, a process of
     * another session or another plugin, any process that is not a
     * descendant, and a pid that no longer exists. A refusal records nothing,
     * writes one line naming the pid and the reason to the plugin's log
     * ("register_child(4242) was refused: it is not a descendant of the
     * plugin host (pid 4100); nothing was recorded"), and the call still
     * returns as usual. The same check applies to anything else that reaches
     * the parent as a registration, so writing one to the protocol yourself
     * gains nothing.
     *
     * Before it returns, an accepted registration is on disk in the session's
     * record (the host waits for that, at most 5 s; called from attach,
     * before the host serves requests, it cannot wait, and the record follows
     * a moment later).
     *
     * What is ended, and when. Every plugin host leads a process group and a
     * session of its own, and everything a plugin starts is in them unless it
     * moves out (setsid, setpgid).
     *   - When the plugin stops, or its host exits or crashes: registered
     *     children still alive, and every process still in the plugin host's
     *     group, registered or not, are terminated (SIGTERM, a grace period of
     *     2 s, then SIGKILL). A registered child that led its own group when
     *     it was registered is signalled with its whole group.
     *   - When the cxagent process dies without stopping the plugin (kill -9,
     *     a crash): the plugin host notices at once and ends its own group
     *     (SIGTERM, 1 s, SIGKILL, the host included).
     *   - If the host could not (it died too, or a power cut), the next
     *     cxagent run finds the record and ends each registered process that
     *     still exists with the same pid and start time, with its group if it
     *     led one, and whatever is still in the plugin host's group.
     * A pid that now belongs to a different process is left alone. A process
     * that left the group (setsid, setpgid) and was never registered is never
     * ended by the host: register it. The start time is what makes a pid
     * trustworthy, so register each process once, right after starting it.
     * Fine to call from any thread, including from inside start.
     */
    void (*register_child)(int64_t pid);

    /*
     * secret: the value of one of the plugin's secrets.
     *   Appended to contract 4's table: check CXAGENT_HOST_HAS_FIELD(host,
     *   secret) first (an older cxagent's table ends before it).
     *   name  one of the names the sidecar declares under "secrets" (and the
     *         user approved with it). Host-owned only while the call runs:
     *         copied before anything else happens.
     *   buf   plugin-owned; the value is copied into it, followed by a NUL
     *         byte. The value may itself hold NUL bytes: use the length.
     *   cap   buf's size in bytes; it must hold the value and the NUL.
     * Returns the value's length in bytes (without the NUL), or one of:
     *   CXAGENT_SECRET_UNDECLARED   (-1) the sidecar does not declare name
     *                               (or it is not a secret name);
     *   CXAGENT_SECRET_UNBOUND      (-2) the user bound nothing to it, or the
     *                               project's config removed the binding;
     *   CXAGENT_SECRET_TOO_SMALL    (-3) cap is too small; nothing was
     *                               copied (values are at most
     *                               CXAGENT_SECRET_MAX bytes);
     *   CXAGENT_SECRET_UNAVAILABLE  (-4) bound, but it did not resolve (a file
     *                               others can read, a command that failed, a
     *                               value under 8 bytes...), or asked for
     *                               during attach, or cxagent did not answer
     *                               within 15 s.
     * The parent writes why to the plugin's log on every refusal.
     * Where the value comes from. cxagent reads it when first asked, in its
     * own process (a file, a command, its own environment), from what the
     * user bound in config.json, and sends it over the host's private pipe
     * to this host only, and only while this host runs the approved bytes.
     * It is never in the host's environment, its argv, a file or the start
     * context: ask for it when you need it (blocks up to 15 s the first
     * time a command binding runs; quick after that).
     * What comes back out. Every text this plugin sends to cxagent (results,
     * errors, progress, log and stream text, stderr lines) has the value
     * replaced by "[REDACTED:<name>]", raw or encoded (base64, hex,
     * percent-encoding). That is a guard against accidents, not a wall: do
     * not print it.
     * Threads. Any thread, once the host serves requests (start, invoke,
     * command, gate, poll, threads of the plugin's own); from attach it
     * returns CXAGENT_SECRET_UNAVAILABLE. Safe to call concurrently.
     * Keep the copy only as long as you need it, and wipe it after.
     */
    int64_t (*secret)(const char* name, char* buf, size_t cap);
} cxagent_host;

/* What cxagent_host.secret returns when it gives no value. */
#define CXAGENT_SECRET_UNDECLARED (-1)
#define CXAGENT_SECRET_UNBOUND (-2)
#define CXAGENT_SECRET_TOO_SMALL (-3)
#define CXAGENT_SECRET_UNAVAILABLE (-4)
/* The longest value a secret may have, in bytes. */
#define CXAGENT_SECRET_MAX 65536

/*
 * CXAGENT_HOST_HAS_FIELD(host, field): non-zero when the host table "host"
 * (a const cxagent_host*) is large enough to contain "field". All contract-4
 * fields are always present when attach is called by a contract-4 host; the
 * macro is for fields appended by later contracts.
 */
#define CXAGENT_HOST_HAS_FIELD(host, field)                                   \
    ((uint32_t)(((const char*)&(host)->field - (const char*)(host))           \
                + sizeof((host)->field)) <= (host)->size)

/*
 * ==========================================================================
 * MANDATORY EXPORTS
 * ==========================================================================
 */

/*
 * cxagent_plugin_abi_version -- the handshake.
 *
 * Required (every contract). Called first, once, before anything else, on one
 * thread. The only export whose answer is not JSON: it returns the contract
 * number the plugin was written for, so the host can decide whether to go on
 * before it parses anything. Return the same number you put in the
 * manifest's "pluginContract"; for a plugin written against this header that
 * is 4 (CXAGENT_PLUGIN_CONTRACT).
 *
 * Accepted values run from CXAGENT_PLUGIN_CONTRACT_OLDEST to the host's
 * CXAGENT_PLUGIN_CONTRACT; anything else refuses the load (see the overview).
 * Must not allocate, block, or call the host; it has no arguments and nothing
 * to free.
 */
CXAGENT_PLUGIN_EXPORT int32_t cxagent_plugin_abi_version(void);

/*
 * cxagent_plugin_describe -- the manifest.
 *
 * Required (every contract). Called once, right after the handshake and before
 * attach and start, on one thread, with nothing else running. The plugin has
 * no working directory or settings yet, so the manifest must not depend on
 * them. It runs inside the host's startup deadline (currently 10 s): return
 * quickly.
 *
 * Returns a plugin-owned JSON object, freed with cxagent_plugin_free. Never
 * NULL: NULL or text that is not a valid manifest refuses the load.
 * The manifest must agree with the sidecar file (see the overview).
 *
 * Manifest keys (unknown keys are refused by name, at the top level and inside
 * tools and commands; every problem is reported with its JSON path):
 *
 *   "pluginContract" integer, required. Equal to cxagent_plugin_abi_version().
 *   "name"           string, required. 1 to 64 characters of A-Z a-z 0-9 . _ -,
 *                    starting with a letter or digit. The name users write in
 *                    their configuration.
 *   "version"        string, required, not blank. Your own release number.
 *   "instructions"   string or null, optional. Text added to the model's
 *                    instructions while the plugin is loaded, shown under a
 *                    heading listing your tools. Write it for the model: what
 *                    is true of the tools as a set (a coordinate convention, a
 *                    call that must come first, what an empty answer means).
 *   "spawns"         boolean, optional, default false. true if the plugin
 *                    starts processes (see register_child).
 *   "client"         boolean, optional, default false. true if the plugin
 *                    originates work through cxagent_plugin_poll; requires the
 *                    poll export, or the load is refused naming it.
 *   "secrets"        array, optional. Secrets the plugin may ask for with
 *                    host->secret, shown in the approval prompt. Each element:
 *                    {"name": 1-64 of a-z 0-9 _ . - starting with a letter or
 *                    digit, "description": string, optional}. The user binds
 *                    each to a value in config.json; never put a value here.
 *   "sandbox"        object, optional. What the plugin may touch once it runs,
 *                    enforced by the kernel before any of its code runs
 *                    (README, "What a plugin may do"); absent: unconfined.
 *                    {"fs": {"read": [path...], "write": [path...]},
 *                     "net": "none" (default) | "any" |
 *                            {"connect": [{"port": N}], "bind": [{"port": N}]},
 *                     "processes": N, "memoryMiB": N, "openFiles": N}. A path
 *                    is absolute or begins with ${project}, ${plugin},
 *                    ${cache} or ${tmp}; no "..". A denied access fails with
 *                    EACCES or EPERM; describe must return the same sandbox.
 *   "tools"          array, required, may be empty (a plugin that only adds
 *                    instructions). Each element:
 *       "name"          string, required, 1 to 64 of A-Z a-z 0-9 _ - (the form
 *                       model APIs accept). Tool names are unique across the
 *                       whole session, built-in tools included (read_file,
 *                       glob, grep, write_file, replace_in_file, run_shell,
 *                       http_request, web_fetch, ask_user, todowrite, agent,
 *                       skill): a clash refuses the whole plugin. Prefix them
 *                       with something specific to your plugin.
 *       "description"   string, optional, default "". What the model reads to
 *                       decide when to call the tool.
 *       "inputSchema"   object, optional, default {"type":"object"}. A JSON
 *                       Schema for the arguments object.
 *       "gated"         true, false or "dynamic"; optional, default false.
 *                       true: ask the user before every call. false: never ask.
 *                       "dynamic": ask cxagent_plugin_gate for each call. Any
 *                       other value is refused, naming the tool and the value.
 *       "alwaysAskable" boolean, optional, default true. false removes the
 *                       "Always" option from this tool's prompt, so it asks
 *                       every time.
 *   The user, not the plugin, has the last word on tools: their config.json
 *   (and a project's .cxagent/config.json, which can only narrow) may hide a
 *   tool -- it is then never listed, and its invoke and gate are refused before
 *   they reach the plugin -- or make it ask on every call whatever its "gated"
 *   says, and may set shorter deadlines for invoke and gate. The manifest is
 *   still checked whole, hidden tools included. Name tools so that a user can
 *   select them with a glob (files_read, files_write: "files_*").
 *   "commands"       array, optional. Commands a person can type. Each element:
 *       "name"          string, required, without a leading slash.
 *       "summary"       string, optional. One line for help listings.
 *       "arguments"     array, optional, of {"name": string,
 *                       "summary": string (optional)}; documentation only.
 *
 * Example:
 *   {"pluginContract":4,"name":"calculator","version":"1.0.0",
 *    "instructions":"Use these tools for exact arithmetic.","spawns":false,
 *    "tools":[{"name":"calc_add","description":"Adds a and b.",
 *              "inputSchema":{"type":"object",
 *                             "properties":{"a":{"type":"number"},
 *                                           "b":{"type":"number"}},
 *                             "required":["a","b"]},
 *              "gated":true}]}
 */
CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_describe(void);

/*
 * cxagent_plugin_start -- begin work.
 *
 * Required (every contract). Called once, after describe and attach, on one
 * thread, before any invoke, gate, poll or command. This is where the plugin
 * reads its settings, opens connections, starts backend processes and builds
 * what its tools need. Do it here, not lazily on the first call: the tool list
 * is fixed before calls start, so a backend that comes up on first use is a
 * tool that fails its first call. The host waits at most 30 s (current
 * default) before failing the load.
 *
 * context_json  host-owned, valid only during this call, never NULL:
 *   {"workingDirectory": "<absolute path of the project folder>",
 *    "settings": <this plugin's "settings" value from the user's config.json,
 *                 passed through verbatim; {} when there is none>,
 *    "hostContract": <the host's contract number, 4 for this header>}
 *   Settings are whatever the user typed, so a value may be missing or of the
 *   wrong type. Prefer falling back to a working default over failing. Use
 *   workingDirectory for relative paths rather than changing the process's
 *   current directory.
 *
 * Returns a plugin-owned result envelope, freed with cxagent_plugin_free,
 * never NULL:
 *   {"ok": true}                   started
 *   {"ok": false, "error": "..."}  refused; the load fails and the user sees
 *                                  the message (for example "needs host
 *                                  contract 5, this host speaks 4")
 * NULL, or text that is not such an envelope, fails the load as well.
 * See cxagent_plugin_invoke for the envelope's rules.
 *
 * Host table functions may be called from inside start; there is no current
 * call, so only log reaches anywhere (the plugin's own log).
 */
CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_start(const char* context_json);

/*
 * cxagent_plugin_invoke -- run one tool call.
 *
 * Required (every contract). Called once per tool call, any number of times,
 * after start succeeded. For a gated tool the host has already obtained the
 * user's permission; a denied call never reaches invoke.
 *
 * Threads: may run concurrently with itself (several calls at once, each on
 * its own thread), with gate, with command and with poll. Nothing serializes
 * calls. Protect shared mutable state. The host records the call's id on the
 * calling thread first, so host table reports with call_id NULL belong to this
 * call.
 *
 * tool_name  host-owned, valid during this call. One of the names in your
 *            manifest; treat anything else as your own bug and answer
 *            {"ok":false,...}.
 * call_json  host-owned, valid during this call, never NULL. The arguments
 *            object, always a JSON object ({} when there are none). The
 *            arguments come from a language model and are not validated
 *            against inputSchema: expect missing keys, wrong types and
 *            numbers sent as strings ("3"), and answer with a clear message.
 *
 * There is no deadline unless the caller sets one, but the call cannot be
 * interrupted (see Cancellation in the overview).
 *
 * Returns a plugin-owned result envelope, freed with cxagent_plugin_free,
 * never NULL. Three shapes:
 *
 *   {"ok": true, "result": <JobResult>}   the tool ran (and may have failed on
 *                                         its own terms; see "success")
 *   {"ok": false, "error": "<message>"}   the call itself failed: bad or
 *                                         missing arguments, an unknown tool,
 *                                         an internal error
 *   ({"ok": true} without "result" is correct for start and stop, but for
 *   invoke it fails the call.)
 *
 * Envelope rules: "ok" is required and must be a JSON boolean (not 1, not
 * "true"). "ok": false without "error" gets a generated message. Unknown
 * fields are ignored, here and in the JobResult, so adding diagnostics is
 * safe. NULL, an empty string, invalid JSON, a non-object or a missing "ok"
 * fail the call with a message saying which, showing at most the first 200
 * characters of what was returned; the pointer is freed all the same.
 *
 * JobResult, an object; every field is optional:
 *   "success"          boolean, default false. true: the tool did its job.
 *                      false: it ran and failed on its own terms (a file not
 *                      found, a backend timeout); say why in errorMessage.
 *   "exitCode"         integer, default 0. For tools that run a program.
 *   "errorMessage"     string or null, default null.
 *   "permissionDenied" boolean, default false. Set by the host for calls the
 *                      user denied; plugins normally leave it out.
 *   "decidedBy"        string or null, default null. Set by the host with
 *                      permissionDenied ("user" or "policy").
 *   "output"           object, default {} (a non-object counts as {}). Free
 *                      form, with one key that matters most:
 *       "content"      string: the text the model reads as the tool's answer.
 *                      Without it a model gets the rest of "output" as
 *                      JSON (over MCP), or nothing when there is none, not
 *                      the answer meant for it; `cxagent check` fails it.
 *                      When there is nothing to report, say so in words ("no
 *                      matches for 'foo' in src/"). Other keys carry
 *                      structured data for scripts and other callers.
 *   "logFile"          string or null, default null. Path to a log of the run.
 *   "durationMs"       integer, milliseconds the tool took.
 *
 * Example:
 *   {"ok":true,"result":{"success":true,
 *                        "output":{"content":"2 + 3 = 5","answer":5}}}
 */
CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_invoke(const char* tool_name,
                                                        const char* call_json);

/*
 * cxagent_plugin_gate -- decide whether one call needs the user's permission.
 *
 * Required since contract 2; a plugin with no "dynamic" tools exports one that
 * returns NULL. Called only for tools whose manifest says "gated": "dynamic",
 * before each of their calls, and before invoke (which then follows only if
 * the call was allowed). Never called for tools marked true or false: the
 * manifest is a ceiling, and the gate can only narrow beneath it.
 *
 * Threads: may run concurrently with itself, with invoke, command and poll. It
 * runs outside any call: current_call() returns NULL here, and host reports
 * with call_id NULL are dropped, except log.
 *
 * tool_name, call_json: as for cxagent_plugin_invoke (host-owned, valid during
 * this call, call_json always an object).
 *
 * Must be fast. Inspect the arguments; do not touch the network or the disk,
 * and do not wait on a lock held by a long invoke. The host abandons a gate
 * that has not answered within 500 ms (or the shorter or longer deadline the
 * user's "gateTimeoutMs" sets), then asks the user with a generic
 * wording saying the check did not answer, and without the "Always" option.
 * A slow gate delays only its own call.
 *
 * Returns:
 *   NULL  no prompt: the call goes ahead. This is an answer, not an error.
 *         Never return NULL to mean "I could not decide", because the host
 *         reads it as "this call is fine". To fail safe, return something
 *         that is not a valid gate answer (for example "{}"): the host then
 *         asks, with a generic wording and no "Always".
 *   a plugin-owned JSON object, freed with cxagent_plugin_free:
 *         {"display": "<what the user is asked about>",
 *          "alwaysAskable": <boolean, optional>}
 *         The host asks the user, showing "display". Write it from the
 *         arguments: name the file, the statement or the value, not just the
 *         tool. "display" is wording only; the permission being granted is
 *         always "plugin <name> tool <tool>" in the project folder, whatever
 *         the text says. "Always" is offered only when both this
 *         "alwaysAskable" (default true) and the tool's manifest value allow
 *         it, so the gate can take the option away but never add it.
 *   Anything else (the JSON text null, invalid JSON, a non-object, no string
 *   "display", an {"ok":false} envelope) counts as a failed gate and asks with
 *   the generic wording, never with "Always". So does a crash.
 *
 * Example: {"display":"calc_divide: divide 7 by zero"}
 */
CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_gate(const char* tool_name,
                                                      const char* call_json);

/*
 * cxagent_plugin_stop -- end work.
 *
 * Required (every contract). Called once, when the plugin is unloaded or the
 * session closes. The host issues no new invoke, gate, poll or command once
 * it has called stop, but a call it abandoned earlier may still be running on
 * another thread (see Cancellation). The host waits at most 10 s (current
 * default) before terminating the process.
 *
 * Close what start opened: connections, files, child processes. It must
 * succeed when the backend has already died, and be safe whether or not start
 * succeeded. Stop your own threads, or at least stop them from calling the
 * host table, before returning: the table is invalid once stop returns.
 * Children registered with register_child that are still alive after stop are
 * terminated by the host, and so is every process still in the plugin host's
 * process group (see register_child).
 *
 * Stop is not guaranteed to be called: a session that is killed never gets
 * this far. That is why register_child records children durably.
 *
 * Returns a plugin-owned result envelope, freed with cxagent_plugin_free,
 * never NULL: {"ok": true}, or {"ok": false, "error": "..."}, which is
 * reported to the user but does not prevent the unload.
 */
CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_stop(void);

/*
 * cxagent_plugin_free -- release a string the plugin returned.
 *
 * Required (every contract). The host calls it exactly once for every non-NULL
 * pointer returned by describe, start, invoke, gate, stop, poll or command,
 * after it has copied the bytes, and also when the text could not be parsed
 * or the call's reply is being discarded. It is never called with a pointer
 * the plugin did not return, and never called twice on one pointer. It is not
 * called with NULL, though tolerating NULL costs nothing.
 *
 * Threads: any thread, concurrently with any other export, and not
 * necessarily the thread that produced the pointer; the allocator used must
 * allow that (malloc/free does).
 *
 * Use the deallocator matching the allocator that produced the string: free()
 * for malloc, CString::from_raw for a Rust CString::into_raw, and so on. This
 * is why the host never frees plugin memory itself: the plugin may use a
 * different C runtime or allocator.
 */
CXAGENT_PLUGIN_EXPORT void cxagent_plugin_free(const char* ptr);

/*
 * ==========================================================================
 * OPTIONAL EXPORTS
 * ==========================================================================
 *
 * Each is detected by its presence, independently of the contract number.
 * Leave out any you do not need.
 */

/*
 * cxagent_plugin_poll -- let the plugin originate work.
 *
 * Optional, since contract 3. Required when the manifest says "client": true,
 * and pointless without it, since submissions from a plugin that did not
 * declare "client" are refused. Called on a dedicated thread every 200 ms
 * (current default), starting after start succeeded, and not after stop has
 * been called.
 *
 * Threads: never concurrently with itself (the next poll waits for the
 * previous one to return), but concurrently with invoke, gate and command.
 * Runs outside any call (current_call() returns NULL). Return quickly: a slow
 * poll delays only the next poll.
 *
 * Returns:
 *   NULL  nothing to submit. The usual answer on almost every poll. Do not
 *         allocate an empty object instead.
 *   a plugin-owned JSON object, freed with cxagent_plugin_free:
 *         {"goal": "<a request to start a new agent turn, in words>",
 *          "wantResult": false}
 *         "goal" is a required string. "wantResult" is optional and must be
 *         false or absent in this contract: true is refused by name and the
 *         submission dropped (never quietly downgraded). A submission is
 *         fire-and-forget: the plugin hears nothing back about it.
 *         Submissions from a plugin whose manifest lacks "client": true are
 *         refused. Refusals and unparseable answers are written to the
 *         plugin's log; polling continues.
 */
CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_poll(void);

/*
 * cxagent_plugin_command -- run one command a person typed.
 *
 * Optional, since contract 3. Handles the commands declared in the manifest's
 * "commands" array; where invoke serves a model filling in a JSON schema,
 * command serves a person typing "/<name> some text". If the manifest
 * declares commands but the library does not export this function, the load
 * still succeeds, and the first attempt to run a command fails naming
 * cxagent_plugin_command.
 *
 * Threads: since contract 4, may run concurrently with itself, with invoke,
 * gate and poll. For a plugin that reports contract 2 or 3 the host keeps the
 * promise those contracts made: never two commands at once (they wait their
 * turn; a command the caller abandoned at its deadline gives up its turn,
 * since a native call cannot be interrupted). The host records the call's id
 * on the calling thread first, so host reports with call_id NULL belong to
 * this command, as they do in invoke.
 *
 * name       host-owned, valid during this call: the command's name, as
 *            declared, without the slash.
 * arguments  host-owned, valid during this call, never NULL: the raw text
 *            the person typed after the name, trimmed, "" when there was
 *            none. Plain text, not JSON.
 *
 * Returns:
 *   NULL  the command ran and has nothing to say; the same as
 *         {"message": null, "status": "reported"}.
 *   a plugin-owned JSON object, freed with cxagent_plugin_free:
 *         {"message": "<text for the person>" or null,
 *          "status": "reported" | "changed" | "refused"}
 *         "reported": it ran and reports something. "changed": it ran and
 *         changed some state. "refused": it declined (bad arguments, say);
 *         put the reason in "message". "status" must be exactly one of
 *         those three strings.
 */
CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_command(const char* name,
                                                         const char* arguments);

/*
 * cxagent_plugin_attach -- receive the host table.
 *
 * Optional, since contract 4 (a plugin reporting contract 2 or 3 may export it
 * too). Called once, after describe and before start, on one thread. A plugin
 * without it loads normally; its calls simply report nothing until they
 * return.
 *
 * host  host-owned, never NULL, valid (with every function it points to)
 *       until cxagent_plugin_stop returns. Store the pointer and call
 *       through it. A newer host may pass a larger table than this header
 *       declares; check "size" before using a field added after contract 4.
 *       See the cxagent_host comments for the rules of each function.
 *
 * Returns nothing; there is nothing to free. Do not start work here: start
 * does that, with the context it receives.
 */
CXAGENT_PLUGIN_EXPORT void cxagent_plugin_attach(const cxagent_host* host);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CXAGENT_PLUGIN_H */
