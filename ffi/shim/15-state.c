/* ------------------------------------------------------------------------------------------ */
/* The plugin's exports, as the JavaScript side hands them over (shim_set_exports).          */

typedef const char *(*fn_void)(void);
typedef const char *(*fn_one)(const char *);
typedef const char *(*fn_two)(const char *, const char *);
typedef void (*fn_free)(const char *);

static struct {
  fn_one start;
  fn_two invoke;
  fn_two gate;
  fn_void stop;
  fn_free release;
  fn_void poll;    /* optional */
  fn_two command;  /* optional */
} plugin;
/* ------------------------------------------------------------------------------------------ */
/* State                                                                                        */

static int g_out = -1, g_in = -1;
static size_t g_line_cap = 64u << 20;
static int g_poll_ms = 200;
static long g_spin_ns = 100000; /* see next_line() */
static cxagent_host g_table;

static shim_mutex_t g_write_mu;  /* one writer; also guards the set of active calls */
static shim_mutex_t g_pool_mu;   /* pool counters, exit and poll state */
static shim_cond_t g_pool_cv;
static shim_key_t g_call_key;

typedef struct call {
  i64 id;
  char id_text[24];
  struct call *next;
} call;
static call *g_active;

static int g_threads, g_idle, g_cap;
static int g_exit_requested, g_exit_code;
static int g_poll_state; /* 0 not started, 1 running, 2 asked to end, 3 ended */
static i64 g_child_seq, g_child_acked; /* register_child: sent and confirmed, under g_pool_mu */
