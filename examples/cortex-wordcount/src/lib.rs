//! cortex-wordcount — counts the words of a text, and the lines, words and characters of a file:
//! a Cortex native plugin (the ABI the Cortex SDK's `export_plugin!` produces) written with no
//! crates, so all of the ABI is visible here:
//!
//!   - one export, `cortex_plugin_init`, `#[unsafe(no_mangle)] pub unsafe extern "C" fn`; it fills
//!     a `#[repr(C)]` table of function pointers (`CortexPluginApi`, 64 bytes on 64-bit targets);
//!   - every string crosses as a `CortexBuffer {ptr, len, cap}` passed by value; a buffer this
//!     library returns is a `Vec<u8>` it gave up (`ManuallyDrop`), and `buffer_free` takes it back
//!     with `Vec::from_raw_parts(ptr, len, cap)`, so Rust's allocator allocates and frees it;
//!   - the buffers the host passes in (tool name, input JSON, invocation JSON) are borrowed for
//!     the call and not NUL-terminated: read as `&[u8]` of `len` bytes, never freed here;
//!   - no panic leaves the library: tool_execute runs each tool under `catch_unwind` and answers
//!     a panic with an `is_error` result (a panic reaching an `extern "C"` boundary would abort
//!     the process);
//!   - tools may run at the same time on several threads: the plugin's state is never written
//!     after init.
//!
//! cxagent runs it in a plugin host of its own, once its folder is approved; Cortex can load the
//! same library.

mod json;

use json::Json;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The Cortex native ABI this library speaks.
const NATIVE_ABI_VERSION: u32 = 1;
/// count_file reads files up to this size.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Bytes owned by whoever made them: a returned buffer is this library's until `buffer_free`.
#[repr(C)]
pub struct CortexBuffer {
    ptr: *mut u8,
    len: usize,
    cap: usize,
}

/// What the host offers: only the version of the ABI it speaks.
#[repr(C)]
pub struct CortexHostApi {
    abi_version: u32,
}

/// The table `cortex_plugin_init` fills. A `None` entry is a NULL pointer, which a host refuses.
#[repr(C)]
pub struct CortexPluginApi {
    abi_version: u32,
    plugin: *mut c_void,
    plugin_info: Option<unsafe extern "C" fn(plugin: *mut c_void) -> CortexBuffer>,
    tool_count: Option<unsafe extern "C" fn(plugin: *mut c_void) -> usize>,
    tool_descriptor: Option<unsafe extern "C" fn(plugin: *mut c_void, index: usize) -> CortexBuffer>,
    tool_execute: Option<unsafe extern "C" fn(plugin: *mut c_void, tool_name: CortexBuffer, input_json: CortexBuffer, invocation_json: CortexBuffer) -> CortexBuffer>,
    plugin_drop: Option<unsafe extern "C" fn(plugin: *mut c_void)>,
    buffer_free: Option<unsafe extern "C" fn(buffer: CortexBuffer)>,
}

/// The plugin's state: what it tells the host about itself, built once by init.
struct Plugin {
    descriptors: Vec<String>,
}

/// # Safety
/// `host` and `out` are NULL or valid pointers; `out` has room for the whole table.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cortex_plugin_init(host: *const CortexHostApi, out: *mut CortexPluginApi) -> i32 {
    if host.is_null() || out.is_null() {
        return -1;
    }
    // SAFETY: checked for NULL above; the host's struct is valid for the call.
    if unsafe { (*host).abi_version } != NATIVE_ABI_VERSION {
        return -2;
    }
    let plugin = Box::new(Plugin { descriptors: vec![word_count_descriptor(), count_file_descriptor()] });
    let table = CortexPluginApi {
        abi_version: NATIVE_ABI_VERSION,
        plugin: Box::into_raw(plugin).cast(),
        plugin_info: Some(plugin_info),
        tool_count: Some(tool_count),
        tool_descriptor: Some(tool_descriptor),
        tool_execute: Some(tool_execute),
        plugin_drop: Some(plugin_drop),
        buffer_free: Some(buffer_free),
    };
    // SAFETY: checked for NULL above; the host owns the memory and asked us to fill it.
    unsafe { out.write(table) };
    0
}

unsafe extern "C" fn plugin_info(_plugin: *mut c_void) -> CortexBuffer {
    give(format!(
        r#"{{"name":"cortex-wordcount","version":{},"description":"Exact word, line and character counts, as a Cortex native plugin"}}"#,
        json::quote(env!("CARGO_PKG_VERSION"))
    ))
}

unsafe extern "C" fn tool_count(plugin: *mut c_void) -> usize {
    // SAFETY: `plugin` is the state init made; it lives until plugin_drop.
    unsafe { state(plugin) }.map_or(0, |p| p.descriptors.len())
}

/// Past the end, the empty buffer, as the Cortex SDK answers.
unsafe extern "C" fn tool_descriptor(plugin: *mut c_void, index: usize) -> CortexBuffer {
    // SAFETY: as in tool_count.
    match unsafe { state(plugin) }.and_then(|p| p.descriptors.get(index)) {
        Some(descriptor) => give(descriptor.clone()),
        None => CortexBuffer { ptr: std::ptr::null_mut(), len: 0, cap: 0 },
    }
}

/// # Safety
/// The three buffers are the host's, valid for `len` bytes during the call.
unsafe extern "C" fn tool_execute(_plugin: *mut c_void, tool_name: CortexBuffer, input_json: CortexBuffer, invocation_json: CortexBuffer) -> CortexBuffer {
    // SAFETY: the host lends each buffer for the call; they are read, never kept or freed.
    let (name, input, invocation) = unsafe { (borrow(&tool_name), borrow(&input_json), borrow(&invocation_json)) };
    let result = catch_unwind(AssertUnwindSafe(|| execute(name, input, invocation)))
        .unwrap_or_else(|_| Err("cortex-wordcount: internal error (a panic; its message went to the plugin's stderr: run again with --verbose to see it)".to_owned()));
    give(match result {
        Ok(output) => format!(r#"{{"output":{},"media":[],"is_error":false}}"#, json::quote(&output)),
        Err(message) => format!(r#"{{"output":{},"media":[],"is_error":true}}"#, json::quote(&message)),
    })
}

/// # Safety
/// `plugin` is the state init made, and the host drops it once, after its last call.
unsafe extern "C" fn plugin_drop(plugin: *mut c_void) {
    if !plugin.is_null() {
        // SAFETY: made by Box::into_raw in init, given back exactly once.
        drop(unsafe { Box::from_raw(plugin.cast::<Plugin>()) });
    }
}

/// # Safety
/// `buffer` is one this library returned, unchanged (`cap` included), given back once.
unsafe extern "C" fn buffer_free(buffer: CortexBuffer) {
    if !buffer.ptr.is_null() {
        // SAFETY: every buffer this library returns is a Vec<u8> it gave up in `give`.
        drop(unsafe { Vec::from_raw_parts(buffer.ptr, buffer.len, buffer.cap) });
    }
}

/// Hands bytes to the host; `buffer_free` gets them back.
fn give(text: String) -> CortexBuffer {
    let mut bytes = ManuallyDrop::new(text.into_bytes());
    CortexBuffer { ptr: bytes.as_mut_ptr(), len: bytes.len(), cap: bytes.capacity() }
}

/// # Safety
/// `buffer` is valid for `len` bytes for as long as the slice is used.
unsafe fn borrow(buffer: &CortexBuffer) -> &[u8] {
    if buffer.ptr.is_null() || buffer.len == 0 {
        return &[];
    }
    // SAFETY: upheld by the caller.
    unsafe { std::slice::from_raw_parts(buffer.ptr, buffer.len) }
}

/// # Safety
/// `plugin` is NULL or the state init made, not yet dropped.
unsafe fn state<'a>(plugin: *mut c_void) -> Option<&'a Plugin> {
    // SAFETY: upheld by the caller.
    unsafe { plugin.cast::<Plugin>().as_ref() }
}

// ---------------------------------------------------------------------------------------------
// The tools.

fn word_count_descriptor() -> String {
    r#"{"name":"word_count","description":"Count the words in a text. Use when the user asks how many words a text has.","input_schema":{"type":"object","properties":{"text":{"type":"string","description":"The text to count the words of"}},"required":["text"]},"timeout_secs":null,"capabilities":{"emits_progress":false,"emits_observer_text":false,"background_safe":true}}"#.to_owned()
}

/// Reading a file is an effect: "on_risk" makes cxagent ask before each call, as Cortex would
/// when it judges the call risky. 10 s is the call's default deadline.
fn count_file_descriptor() -> String {
    r#"{"name":"count_file","description":"Count the lines, words and characters of a file, relative to the folder cxagent runs in or absolute.","input_schema":{"type":"object","properties":{"path":{"type":"string","description":"The file to count"}},"required":["path"]},"timeout_secs":10,"capabilities":{"emits_progress":false,"emits_observer_text":false,"background_safe":true,"effects":[{"kind":"read_file","reversibility":"reversible","confirmation":"on_risk","dry_run":"not_supported"}]}}"#.to_owned()
}

/// Runs a tool: Ok is the output the model reads, Err the reason it failed (an is_error result).
fn execute(name: &[u8], input: &[u8], invocation: &[u8]) -> Result<String, String> {
    let name = std::str::from_utf8(name).map_err(|_| "the tool name is not UTF-8".to_owned())?;
    let input = std::str::from_utf8(input).map_err(|_| "the input is not UTF-8".to_owned())?;
    let invocation = std::str::from_utf8(invocation).map_err(|_| "the invocation context is not UTF-8".to_owned())?;
    let args = match json::parse(input) {
        Ok(args @ Json::Object(_)) => args,
        Ok(other) => return Err(format!("invalid input: it must be a JSON object, not {}", other.kind())),
        Err(error) => return Err(format!("invalid input JSON: {error}")),
    };
    // The host says which tool it means and for what kind of turn; a background turn is fine here.
    match json::parse(invocation).ok().as_ref().and_then(|c| c.get("tool_name")) {
        Some(Json::String(tool)) if tool == name => {}
        _ => return Err("invalid invocation JSON: it must name the tool in tool_name".to_owned()),
    }
    match name {
        "word_count" => string_arg(&args, "text").map(|text| {
            let words = text.split_whitespace().count();
            format!("{words} word{}", if words == 1 { "" } else { "s" })
        }),
        "count_file" => string_arg(&args, "path").and_then(count_file),
        _ => Err(format!("native plugin does not expose tool '{name}'")),
    }
}

fn string_arg<'a>(args: &'a Json, key: &str) -> Result<&'a str, String> {
    match args.get(key) {
        Some(Json::String(value)) => Ok(value),
        None | Some(Json::Null) => Err(format!("invalid input: missing '{key}' (a string)")),
        Some(other) => Err(format!("invalid input: '{key}' must be a string, not {}", other.kind())),
    }
}

fn count_file(path: &str) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    if size.is_dir() {
        return Err(format!("{path} is a folder, not a file"));
    }
    if size.len() > MAX_FILE_BYTES {
        return Err(format!("{path} is {} bytes, more than the {MAX_FILE_BYTES} this tool reads", size.len()));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let text = String::from_utf8_lossy(&bytes);
    let lines = if text.is_empty() { 0 } else { text.lines().count() };
    let words = text.split_whitespace().count();
    let characters = text.chars().count();
    Ok(format!("{path} has {lines} lines, {words} words and {characters} characters ({} bytes).", bytes.len()))
}
