/* The host table handed to cxagent_plugin_attach. Its layout must be exactly that of
 * `cxagent_host` in ffi/cxagent_plugin.h: ffi/check-layout.c holds the two together at build time
 * (scripts/build-native.ts compiles it), so a change to one that the other lacks fails the build.
 * Fields are only ever appended. This file uses only the shim's own integer types. */
typedef struct cxagent_host {
  u32 size;
  i32 contract;
  void (*progress)(const char *call_id, i32 percent, const char *text);
  void (*log)(const char *call_id, i32 level, const char *text);
  void (*stream)(const char *call_id, const char *text);
  const char *(*current_call)(void);
  void (*register_child)(i64 pid);
  i64 (*secret)(const char *name, char *buf, size_t cap);
} cxagent_host;
