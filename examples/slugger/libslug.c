/*
 * libslug — a small text library that the slugger plugin ships in its own folder.
 *
 * It is an ordinary shared library with a soname, built by scripts/build-native.ts as
 *   cc -shared -fPIC -Wl,-soname,libslug.so -o libslug.so libslug.c
 * The plugin needs it by that name (DT_NEEDED libslug.so) and finds it through RUNPATH $ORIGIN.
 */
#include <stddef.h>

#define SLUG_EXPORT __attribute__((visibility("default")))

/* Writes the slug of `in` (NUL-terminated) to `out`, at most `cap` bytes with the NUL: ASCII
 * letters lowercased, digits kept, every other run of bytes one '-', none at either end.
 * Returns the slug's length. */
SLUG_EXPORT size_t slug_make(const char *in, char *out, size_t cap) {
  size_t n = 0;
  int pending_dash = 0;
  if (cap == 0) return 0;
  for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
    unsigned char c = *p;
    if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
    int keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!keep) {
      pending_dash = n > 0;
      continue;
    }
    if (pending_dash && n + 1 < cap) out[n++] = '-';
    pending_dash = 0;
    if (n + 1 < cap) out[n++] = (char)c;
  }
  out[n] = '\0';
  return n;
}

SLUG_EXPORT const char *slug_version(void) { return "libslug 1.0"; }
