/**
 * The environment a plugin host gets (STYLE: an allow-list, never this process's whole
 * environment). A plugin runs as the user, so it gets what programs need to run as the user —
 * where things are (PATH, HOME, the XDG folders, TMPDIR), who and where the user is (USER,
 * LOGNAME, SHELL, the locale, TZ), the terminal's kind, and the proxy and CA settings networking
 * code reads — and nothing else: no tokens, no keys, no loader settings (LD_PRELOAD, LD_LIBRARY_PATH:
 * the loader must find what was approved, and only that), no NODE_OPTIONS or BUN_ settings.
 * CXAGENT_PASS_ENV names more variables to pass, comma-separated; a script passes more with
 * `SessionOptions.env`. The same environment decides where the loader looks when the session
 * checks a plugin's libraries (session/inspect.ts).
 */

const PASSED = [
  "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "COLORTERM", "NO_COLOR",
  "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
  "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR",
];

/** Never passed, whatever CXAGENT_PASS_ENV says: they change what the loader maps. */
const NEVER = /^(LD_|DYLD_)/;

export function pluginHostEnv(parent: Readonly<Record<string, string | undefined>>, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const names = new Set(PASSED);
  for (const name of (parent.CXAGENT_PASS_ENV ?? "").split(",")) if (name.trim()) names.add(name.trim());
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined || NEVER.test(name)) continue;
    if (names.has(name) || name.startsWith("LC_")) env[name] = value;
  }
  for (const [name, value] of Object.entries(extra)) env[name] = value;
  return env;
}
