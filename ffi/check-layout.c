/*
 * Compiled at build time (scripts/build-native.ts), never linked: holds the shim's copy of the host
 * table (ffi/shim/10-host-table.c) to the public one (ffi/cxagent_plugin.h). A field added, moved or
 * retyped in one and not the other stops the build here.
 */
#include <stddef.h>
#include <stdint.h>

#include "cxagent_plugin.h"

typedef uint32_t u32;
typedef int32_t i32;
typedef int64_t i64;
#define cxagent_host shim_cxagent_host
#include "shim/10-host-table.c"
#undef cxagent_host

#define SAME(field)                                                                         \
  _Static_assert(offsetof(shim_cxagent_host, field) == offsetof(cxagent_host, field),       \
                 "ffi/shim/10-host-table.c puts " #field " elsewhere than ffi/cxagent_plugin.h"); \
  _Static_assert(sizeof(((shim_cxagent_host *)0)->field) == sizeof(((cxagent_host *)0)->field), \
                 "ffi/shim/10-host-table.c sizes " #field " unlike ffi/cxagent_plugin.h")

_Static_assert(sizeof(shim_cxagent_host) == sizeof(cxagent_host), "ffi/shim/10-host-table.c and ffi/cxagent_plugin.h differ in size");
SAME(size);
SAME(contract);
SAME(progress);
SAME(log);
SAME(stream);
SAME(current_call);
SAME(register_child);
SAME(secret);

/* The function pointers' types, too: assigning one table's field to the other's must compile. */
static void check_types(cxagent_host *public_table, shim_cxagent_host *shim_table) {
  public_table->progress = shim_table->progress;
  public_table->log = shim_table->log;
  public_table->stream = shim_table->stream;
  public_table->current_call = shim_table->current_call;
  public_table->register_child = shim_table->register_child;
  public_table->secret = shim_table->secret;
}
void (*cxagent_check_layout)(cxagent_host *, shim_cxagent_host *) = check_types;
