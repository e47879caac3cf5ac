//! wordcount — counts the lines, words and characters of a text or of a file: a cxagent plugin
//! in Rust (edition 2024) with no crates, so the whole ABI of ffi/cxagent_plugin.h is visible:
//!
//!   - each export is `#[unsafe(no_mangle)] pub extern "C" fn`; edition 2024 wants the
//!     `unsafe(...)`, because an unmangled name can clash with any other symbol in the process;
//!   - every string handed to the host is a fresh `CString::into_raw`, and cxagent_plugin_free
//!     takes it back with `CString::from_raw`, so Rust's allocator both allocates and frees it;
//!   - no panic leaves an export: each runs its body under `catch_unwind` and answers a panic
//!     with an {"ok":false} envelope (a panic that reached the `extern "C"` boundary would abort
//!     the plugin host, costing the call);
//!   - the manifest is the sidecar itself, compiled in with `include_str!`, so describe and
//!     wordcount.plugin.json cannot disagree;
//!   - `Host` mirrors the C struct cxagent_host field by field, with `#[repr(C)]`.

mod json;

use json::Json;
use std::ffi::{CStr, CString, c_char};
use std::fs::File;
use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

const CONTRACT: i32 = 4;
const MANIFEST: &str = include_str!("../wordcount.plugin.json");
/// wordcount_file reads files up to this size.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
const LOG_DEBUG: i32 = 1;

/// The project folder, from the start context. Written once by start, before any call, and only
/// read afterwards, so the calls that run at once on several threads need no lock.
static WORKING_DIRECTORY: OnceLock<PathBuf> = OnceLock::new();

/// The host table, `struct cxagent_host` of the header. Only ever read through a pointer: a
/// newer host may hand over a longer table, so check `size` before reading a field added later.
#[repr(C)]
pub struct Host {
    size: u32,
    contract: i32,
    progress: Option<unsafe extern "C" fn(call_id: *const c_char, percent: i32, text: *const c_char)>,
    log: Option<unsafe extern "C" fn(call_id: *const c_char, level: i32, text: *const c_char)>,
    stream: Option<unsafe extern "C" fn(call_id: *const c_char, text: *const c_char)>,
    current_call: Option<unsafe extern "C" fn() -> *const c_char>,
    register_child: Option<unsafe extern "C" fn(pid: i64)>,
}

struct HostTable(*const Host);
// SAFETY: the host never changes the table, and its functions may be called from any thread
// until cxagent_plugin_stop returns.
unsafe impl Send for HostTable {}
unsafe impl Sync for HostTable {}

static HOST: OnceLock<HostTable> = OnceLock::new();

/// A line for the plugin's log, through the host table when there is one.
fn log(level: i32, message: &str) {
    let Some(HostTable(host)) = HOST.get() else { return };
    let host = *host;
    // SAFETY: the pointer came from attach and stays valid until stop returns; log is called
    // only from start, before that.
    let (size, log) = unsafe { ((*host).size as usize, (*host).log) };
    if size < std::mem::offset_of!(Host, log) + size_of::<usize>() {
        return;
    }
    let (Some(log), Ok(text)) = (log, CString::new(message.replace('\0', " "))) else { return };
    // SAFETY: a function of the host table, called with a NUL-terminated string it copies.
    unsafe { log(std::ptr::null(), level, text.as_ptr()) };
}

// ---------------------------------------------------------------------------------------------
// The exports. Each one only crosses the boundary; the work is in the plain Rust functions below.

#[unsafe(no_mangle)]
pub extern "C" fn cxagent_plugin_abi_version() -> i32 {
    CONTRACT
}

#[unsafe(no_mangle)]
pub extern "C" fn cxagent_plugin_describe() -> *const c_char {
    give(MANIFEST.to_owned())
}

/// # Safety
/// `host` is the host's table, valid until cxagent_plugin_stop returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cxagent_plugin_attach(host: *const Host) {
    if !host.is_null() {
        let _ = HOST.set(HostTable(host));
    }
}

/// # Safety
/// `context_json` is a NUL-terminated string, valid for the duration of the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cxagent_plugin_start(context_json: *const c_char) -> *const c_char {
    let context = unsafe { copy_in(context_json) };
    reply(|| start(&context))
}

/// # Safety
/// Both arguments are NUL-terminated strings, valid for the duration of the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cxagent_plugin_invoke(tool_name: *const c_char, call_json: *const c_char) -> *const c_char {
    let (tool, call) = unsafe { (copy_in(tool_name), copy_in(call_json)) };
    reply(|| invoke(&tool, &call))
}

/// # Safety
/// Both arguments are NUL-terminated strings, valid for the duration of the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cxagent_plugin_gate(tool_name: *const c_char, call_json: *const c_char) -> *const c_char {
    let (tool, call) = unsafe { (copy_in(tool_name), copy_in(call_json)) };
    // NULL means "no question needed". A panic answers "{}", which is not a valid gate answer, so
    // the host asks with its own wording: failing safe.
    match catch_unwind(AssertUnwindSafe(|| gate(&tool, &call))) {
        Ok(None) => std::ptr::null(),
        Ok(Some(question)) => give(question),
        Err(_) => give("{}".to_owned()),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn cxagent_plugin_stop() -> *const c_char {
    give(r#"{"ok":true}"#.to_owned())
}

/// # Safety
/// `ptr` is NULL or a pointer this library returned and has not been given back yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cxagent_plugin_free(ptr: *const c_char) {
    if !ptr.is_null() {
        // SAFETY: every pointer this library returns comes from CString::into_raw, and the host
        // returns each one exactly once.
        drop(unsafe { CString::from_raw(ptr.cast_mut()) });
    }
}

/// Copies a host-owned string, which is only valid during the call.
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated string.
unsafe fn copy_in(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

/// Hands a string to the host; cxagent_plugin_free gets it back.
fn give(text: String) -> *const c_char {
    // json::quote escapes every control character, so no reply holds a NUL byte; should one
    // ever do, answer a valid envelope rather than panic here.
    CString::new(text).unwrap_or_else(|_| c"{\"ok\":false,\"error\":\"wordcount: a reply held a NUL byte\"}".to_owned()).into_raw()
}

/// Runs an export's body, turning a panic into an error envelope.
fn reply(body: impl FnOnce() -> String) -> *const c_char {
    let text = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| r#"{"ok":false,"error":"wordcount: internal error (a panic; its message went to the plugin's stderr: run again with --verbose to see it)"}"#.to_owned());
    give(text)
}

// ---------------------------------------------------------------------------------------------
// The plugin.

fn start(context: &str) -> String {
    let folder = match json::parse(context).ok().as_ref().and_then(|c| c.get("workingDirectory")) {
        Some(Json::String(folder)) => PathBuf::from(folder),
        _ => return failure("wordcount: the start context has no workingDirectory"),
    };
    log(LOG_DEBUG, &format!("relative paths are read from {}", folder.display()));
    let _ = WORKING_DIRECTORY.set(folder);
    r#"{"ok":true}"#.to_owned()
}

fn invoke(tool: &str, call: &str) -> String {
    let args = match json::parse(call) {
        Ok(args @ Json::Object(_)) => args,
        Ok(other) => return failure(&format!("the arguments must be a JSON object, not {}", other.kind())),
        Err(error) => return failure(&format!("the arguments could not be read: {error}")),
    };
    // Messages need not name the tool: the host reports them as "<tool> failed: <message>".
    let result = match tool {
        "wordcount_text" => string_arg(&args, "text").map(count_text),
        "wordcount_file" => string_arg(&args, "path").and_then(|path| count_file(tool, path)),
        _ => Err(format!("wordcount has no tool '{tool}'")),
    };
    result.unwrap_or_else(|message| failure(&message))
}

/// Only wordcount_file is "dynamic"; it asks before reading outside the project folder. A gate
/// must answer quickly and must not touch the disk, so it judges the path as written.
fn gate(tool: &str, call: &str) -> Option<String> {
    if tool != "wordcount_file" {
        return None;
    }
    // Arguments the call will refuse need no question: nothing is read.
    let args = json::parse(call).ok()?;
    let Some(Json::String(path)) = args.get("path") else { return None };
    if path.is_empty() || inside_project(Path::new(path)) {
        return None;
    }
    let display = format!("wordcount_file: read {path}, outside the project folder");
    Some(format!(r#"{{"display":{},"alwaysAskable":false}}"#, json::quote(&display)))
}

/// Whether a path, as written, stays in the project folder: relative without a `..`, or absolute
/// under the working directory. A symbolic link that leads out is not seen here (that would need
/// the disk); count_file checks for one before reading.
fn inside_project(path: &Path) -> bool {
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return false;
    }
    path.is_relative() || WORKING_DIRECTORY.get().is_some_and(|folder| path.starts_with(folder))
}

/// Where a path the gate let through really leads, when a symbolic link takes it out of the
/// project folder: the gate judged the words, and that read was never asked about.
fn leads_out(path: &str, full: &Path) -> Option<PathBuf> {
    if !inside_project(Path::new(path)) {
        return None;
    }
    let folder = WORKING_DIRECTORY.get()?.canonicalize().ok()?;
    let real = full.canonicalize().ok()?;
    (!real.starts_with(&folder)).then_some(real)
}

fn string_arg<'a>(args: &'a Json, key: &str) -> Result<&'a str, String> {
    match args.get(key) {
        None | Some(Json::Null) => Err(format!("missing required argument '{key}' (a string)")),
        Some(Json::String(value)) => Ok(value),
        Some(other) => Err(format!("argument '{key}' must be a string, but is {}", other.kind())),
    }
}

struct Counts {
    lines: usize,
    words: usize,
    characters: usize,
    bytes: usize,
}

/// Lines count the last one even without a final line break; words are separated by whitespace;
/// characters are Unicode scalar values.
fn count(text: &str) -> Counts {
    let breaks = text.matches('\n').count();
    Counts {
        lines: breaks + usize::from(!text.is_empty() && !text.ends_with('\n')),
        words: text.split_whitespace().count(),
        characters: text.chars().count(),
        bytes: text.len(),
    }
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn summary(c: &Counts) -> String {
    format!("{}, {} and {}", plural(c.lines, "line"), plural(c.words, "word"), plural(c.characters, "character"))
}

fn counts_json(c: &Counts) -> String {
    format!(r#""lines":{},"words":{},"characters":{},"bytes":{}"#, c.lines, c.words, c.characters, c.bytes)
}

fn count_text(text: &str) -> String {
    let counts = count(text);
    let content = format!("The text has {}.", summary(&counts));
    format!(r#"{{"ok":true,"result":{{"success":true,"output":{{"content":{},{}}}}}}}"#, json::quote(&content), counts_json(&counts))
}

fn count_file(tool: &str, path: &str) -> Result<String, String> {
    if path.is_empty() {
        return Err("argument 'path' must not be empty".to_owned());
    }
    let full = match WORKING_DIRECTORY.get() {
        Some(folder) => folder.join(path),
        None => PathBuf::from(path),
    };
    if let Some(real) = leads_out(path, &full) {
        return Err(format!(
            "{path} leads outside the project folder, to {}; to read it, ask for that path itself, which needs permission",
            real.display()
        ));
    }
    // A folder, a FIFO (which would block the read forever) or a device is not a file to count.
    match std::fs::metadata(&full) {
        Err(error) => return Ok(tool_failed(&format!("cannot read {path}: {error}"))),
        Ok(meta) if !meta.is_file() => return Ok(tool_failed(&format!("{path} is not a regular file"))),
        Ok(_) => {}
    }
    let mut bytes = Vec::new();
    let read = File::open(&full).and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes));
    if let Err(error) = read {
        return Ok(tool_failed(&format!("cannot read {path}: {error}")));
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Ok(tool_failed(&format!("{path} is larger than {} MiB, the most {tool} reads", MAX_FILE_BYTES >> 20)));
    }
    let counts = count(&String::from_utf8_lossy(&bytes));
    let counts = Counts { bytes: bytes.len(), ..counts };
    let content = format!("{path} has {} ({}).", summary(&counts), plural(counts.bytes, "byte"));
    let output = format!(r#"{{"content":{},"path":{},{}}}"#, json::quote(&content), json::quote(&full.to_string_lossy()), counts_json(&counts));
    Ok(format!(r#"{{"ok":true,"result":{{"success":true,"output":{output}}}}}"#))
}

/// The call could not be made: bad arguments, an unknown tool.
fn failure(message: &str) -> String {
    format!(r#"{{"ok":false,"error":{}}}"#, json::quote(message))
}

/// The tool ran and failed on its own terms; `content` tells the model why.
fn tool_failed(message: &str) -> String {
    let m = json::quote(message);
    format!(r#"{{"ok":true,"result":{{"success":false,"errorMessage":{m},"output":{{"content":{m}}}}}}}"#)
}
