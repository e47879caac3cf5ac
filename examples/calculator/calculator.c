/*
 * calculator.c -- an example cxagent plugin: add, multiply and divide.
 *
 * One file, C11, no JSON library. It shows the whole ABI of
 * ffi/cxagent_plugin.h at work:
 *
 *   - the manifest kept in one string constant (MANIFEST), which describe
 *     returns and which calculator.plugin.json repeats byte for byte;
 *   - settings read in start ("precision", with a default for every mistake);
 *   - the three gating modes: calc_add always asks (gated: true),
 *     calc_multiply never asks (gated: false), calc_divide asks through the
 *     gate export only when the divisor is zero (gated: "dynamic");
 *   - both failure channels: {"ok":false} when the call itself is wrong (an
 *     unknown tool, a missing argument), and a result with success:false when
 *     the tool ran and refused (division by zero);
 *   - every returned string malloc'd and released by cxagent_plugin_free.
 *
 * Build, from the repository root:
 *   cc -shared -fPIC -Wall -Wextra -Werror -I ffi \
 *      -o examples/calculator/calculator.so examples/calculator/calculator.c
 *
 * Threads: invoke and gate may run on several threads at once. The only
 * mutable global is the precision, written once in start (before any call)
 * and read atomically afterwards; everything else lives on the stack or in
 * per-call heap buffers.
 */

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxagent_plugin.h"

/* ------------------------------------------------------------------------ */
/* The manifest: the single source of truth. calculator.plugin.json holds     */
/* exactly this text.                                                         */
/* ------------------------------------------------------------------------ */

#define CALC_CONTRACT 4

_Static_assert(CALC_CONTRACT >= CXAGENT_PLUGIN_CONTRACT_OLDEST &&
                   CALC_CONTRACT <= CXAGENT_PLUGIN_CONTRACT,
               "the calculator targets contract 4");

static const char MANIFEST[] =
    "{\n"
    "  \"pluginContract\": 4,\n"
    "  \"name\": \"calculator\",\n"
    "  \"version\": \"1.0.0\",\n"
    "  \"instructions\": \"Use calc_add, calc_multiply and calc_divide for "
    "arithmetic on two numbers instead of working it out yourself. Pass both "
    "operands as JSON numbers in a and b. The text of each answer is rounded "
    "to a configured number of decimal places.\",\n"
    "  \"spawns\": false,\n"
    "  \"sandbox\": { \"fs\": { \"read\": [], \"write\": [] }, \"net\": \"none\" },\n"
    "  \"tools\": [\n"
    "    {\n"
    "      \"name\": \"calc_add\",\n"
    "      \"description\": \"Adds two numbers and returns a + b.\",\n"
    "      \"inputSchema\": {\n"
    "        \"type\": \"object\",\n"
    "        \"properties\": {\n"
    "          \"a\": { \"type\": \"number\", \"description\": \"The first addend.\" },\n"
    "          \"b\": { \"type\": \"number\", \"description\": \"The second addend.\" }\n"
    "        },\n"
    "        \"required\": [\"a\", \"b\"]\n"
    "      },\n"
    "      \"gated\": true\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"calc_multiply\",\n"
    "      \"description\": \"Multiplies two numbers and returns a * b.\",\n"
    "      \"inputSchema\": {\n"
    "        \"type\": \"object\",\n"
    "        \"properties\": {\n"
    "          \"a\": { \"type\": \"number\", \"description\": \"The first factor.\" },\n"
    "          \"b\": { \"type\": \"number\", \"description\": \"The second factor.\" }\n"
    "        },\n"
    "        \"required\": [\"a\", \"b\"]\n"
    "      },\n"
    "      \"gated\": false\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"calc_divide\",\n"
    "      \"description\": \"Divides a by b and returns a / b. Dividing by zero "
    "is reported as a failure, and the user is asked before it is attempted.\",\n"
    "      \"inputSchema\": {\n"
    "        \"type\": \"object\",\n"
    "        \"properties\": {\n"
    "          \"a\": { \"type\": \"number\", \"description\": \"The dividend.\" },\n"
    "          \"b\": { \"type\": \"number\", \"description\": \"The divisor.\" }\n"
    "        },\n"
    "        \"required\": [\"a\", \"b\"]\n"
    "      },\n"
    "      \"gated\": \"dynamic\"\n"
    "    }\n"
    "  ]\n"
    "}\n";

/* ------------------------------------------------------------------------ */
/* Settings                                                                 */
/* ------------------------------------------------------------------------ */

#define PRECISION_DEFAULT 4
#define PRECISION_MIN 0
#define PRECISION_MAX 12

/* Decimal places in the text a model reads. Written only by start. */
static _Atomic int g_precision = PRECISION_DEFAULT;

/* ------------------------------------------------------------------------ */
/* Growable output buffer                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    char* data;
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed; the result is unusable */
} strbuf;

static void sb_reserve(strbuf* sb, size_t extra)
{
    if (sb->failed)
        return;
    if (sb->len + extra + 1 <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 128;
    while (cap < sb->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) {
            sb->failed = true;
            return;
        }
        cap *= 2;
    }
    char* grown = realloc(sb->data, cap);
    if (grown == NULL) {
        sb->failed = true;
        return;
    }
    sb->data = grown;
    sb->cap = cap;
}

static void sb_putn(strbuf* sb, const char* s, size_t n)
{
    sb_reserve(sb, n);
    if (sb->failed)
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

static void sb_puts(strbuf* sb, const char* s)
{
    sb_putn(sb, s, strlen(s));
}

/* Appends s as a JSON string literal, quotes included. */
static void sb_json_string(strbuf* sb, const char* s)
{
    static const char hex[] = "0123456789abcdef";
    sb_putn(sb, "\"", 1);
    for (const unsigned char* p = (const unsigned char*)s; *p; p++) {
        switch (*p) {
        case '"': sb_putn(sb, "\\\"", 2); break;
        case '\\': sb_putn(sb, "\\\\", 2); break;
        case '\n': sb_putn(sb, "\\n", 2); break;
        case '\r': sb_putn(sb, "\\r", 2); break;
        case '\t': sb_putn(sb, "\\t", 2); break;
        case '\b': sb_putn(sb, "\\b", 2); break;
        case '\f': sb_putn(sb, "\\f", 2); break;
        default:
            if (*p < 0x20) {
                char esc[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };
                sb_putn(sb, esc, sizeof esc);
            } else {
                sb_putn(sb, (const char*)p, 1);
            }
        }
    }
    sb_putn(sb, "\"", 1);
}

/* Hands the buffer over as a returned string, or NULL if anything failed. */
static const char* sb_finish(strbuf* sb)
{
    if (sb->failed || sb->data == NULL) {
        free(sb->data);
        return NULL;
    }
    return sb->data;
}

/* A fresh heap copy of s: every returned string must be freeable. */
static const char* heap_copy(const char* s)
{
    size_t n = strlen(s) + 1;
    char* p = malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* {"ok":false,"error":<message>} */
static const char* envelope_error(const char* message)
{
    strbuf sb = { 0 };
    sb_puts(&sb, "{\"ok\":false,\"error\":");
    sb_json_string(&sb, message);
    sb_puts(&sb, "}");
    return sb_finish(&sb);
}

/* ------------------------------------------------------------------------ */
/* Numbers, independent of the process locale                               */
/* ------------------------------------------------------------------------ */

/*
 * printf and strtod use the decimal separator of the current LC_NUMERIC
 * locale, which need not be '.'. JSON always uses '.', so numbers are
 * translated on the way in and out. The separator is looked up on each use
 * rather than cached, to keep the plugin free of mutable globals.
 */
static size_t locale_point(char out[8])
{
    char probe[32];
    int n = snprintf(probe, sizeof probe, "%.1f", 0.5);
    /* probe is "0" <separator> "5" */
    if (n < 3 || (size_t)n >= sizeof probe || probe[0] != '0' || probe[n - 1] != '5' ||
        (size_t)(n - 2) >= 8) {
        out[0] = '.';
        out[1] = '\0';
        return 1;
    }
    size_t len = (size_t)n - 2;
    memcpy(out, probe + 1, len);
    out[len] = '\0';
    return len;
}

/* Replaces the locale's decimal separator in s (NUL-terminated) with '.'. */
static void to_json_point(char* s)
{
    char point[8];
    size_t len = locale_point(point);
    if (len == 1 && point[0] == '.')
        return;
    char* at = strstr(s, point);
    if (at == NULL)
        return;
    *at = '.';
    memmove(at + 1, at + len, strlen(at + len) + 1);
}

/*
 * Converts the JSON number text [s, s + n) to a double. Returns false when the
 * value does not fit in a finite double (1e999, say).
 */
static bool parse_json_number(const char* s, size_t n, double* out)
{
    char point[8];
    size_t plen = locale_point(point);
    char small[128];
    size_t need = n + plen + 1;
    char* buf = need <= sizeof small ? small : malloc(need);
    if (buf == NULL)
        return false;

    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            memcpy(buf + k, point, plen);
            k += plen;
        } else {
            buf[k++] = s[i];
        }
    }
    buf[k] = '\0';

    char* end = NULL;
    double value = strtod(buf, &end);
    bool ok = end == buf + k && isfinite(value);
    if (buf != small)
        free(buf);
    if (ok)
        *out = value;
    return ok;
}

/*
 * The shortest text that reads back as exactly x, as a JSON number:
 * 0.1 rather than 0.10000000000000001, but never a lost bit. x must be finite.
 */
static void format_exact(double x, char out[64])
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(out, 64, "%.*g", digits, x);
        if (strtod(out, NULL) == x)
            break;
    }
    to_json_point(out);
}

/* x for a human or a model to read: like format_exact, without a minus zero. */
static void format_operand(double x, char out[64])
{
    format_exact(x == 0.0 ? 0.0 : x, out);
}

/*
 * x rounded to `precision` decimals, trailing zeros trimmed: 5, 0.3333, -2.5.
 * Magnitudes of 1e15 and above are written like format_operand (1e+20), where
 * fixed notation would only add digits that carry no information.
 */
static void format_rounded(double x, int precision, char out[512])
{
    if (x >= 1e15 || x <= -1e15) {
        format_operand(x, out);
        return;
    }
    if (precision < PRECISION_MIN || precision > PRECISION_MAX)
        precision = PRECISION_DEFAULT;
    snprintf(out, 512, "%.*f", precision, x);
    to_json_point(out);
    char* point = strchr(out, '.');
    if (point != NULL) {
        char* end = out + strlen(out);
        while (end > point + 1 && end[-1] == '0')
            *--end = '\0';
        if (end == point + 1)
            *point = '\0';
    }
    if (strcmp(out, "-0") == 0)
        strcpy(out, "0");
}

/* ------------------------------------------------------------------------ */
/* A small, strict JSON reader                                              */
/* ------------------------------------------------------------------------ */

/*
 * Enough JSON to find a member of an object and read a number or a string.
 * Every skip function checks the full grammar (strings with their escapes,
 * nested objects and arrays, literals, numbers), so braces or quotes inside
 * strings cannot mislead it. Each returns the position just after what it
 * skipped, or NULL when the text is not valid JSON. Nesting deeper than
 * JSON_MAX_DEPTH counts as invalid, which bounds the recursion.
 */

#define JSON_MAX_DEPTH 200

static const char* skip_ws(const char* p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* p at the opening quote. */
static const char* skip_string(const char* p)
{
    p++;
    for (;;) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c < 0x20) /* the end of the text, or a raw control character */
            return NULL;
        if (c != '\\') {
            p++;
            continue;
        }
        p++;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p++;
            break;
        case 'u':
            for (int i = 1; i <= 4; i++)
                if (hex_value(p[i]) < 0)
                    return NULL;
            p += 5;
            break;
        default:
            return NULL;
        }
    }
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char* skip_number(const char* p)
{
    if (*p == '-')
        p++;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (is_digit(*p))
            p++;
    } else {
        return NULL;
    }
    if (*p == '.') {
        p++;
        if (!is_digit(*p))
            return NULL;
        while (is_digit(*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!is_digit(*p))
            return NULL;
        while (is_digit(*p))
            p++;
    }
    return p;
}

static const char* skip_literal(const char* p, const char* word)
{
    size_t n = strlen(word);
    return strncmp(p, word, n) == 0 ? p + n : NULL;
}

/* Skips leading whitespace, then one value. */
static const char* skip_value(const char* p, int depth)
{
    p = skip_ws(p);
    switch (*p) {
    case '{':
        if (depth >= JSON_MAX_DEPTH)
            return NULL;
        p = skip_ws(p + 1);
        if (*p == '}')
            return p + 1;
        for (;;) {
            if (*p != '"')
                return NULL;
            p = skip_string(p);
            if (p == NULL)
                return NULL;
            p = skip_ws(p);
            if (*p != ':')
                return NULL;
            p = skip_value(p + 1, depth + 1);
            if (p == NULL)
                return NULL;
            p = skip_ws(p);
            if (*p == '}')
                return p + 1;
            if (*p != ',')
                return NULL;
            p = skip_ws(p + 1);
        }
    case '[':
        if (depth >= JSON_MAX_DEPTH)
            return NULL;
        p = skip_ws(p + 1);
        if (*p == ']')
            return p + 1;
        for (;;) {
            p = skip_value(p, depth + 1);
            if (p == NULL)
                return NULL;
            p = skip_ws(p);
            if (*p == ']')
                return p + 1;
            if (*p != ',')
                return NULL;
            p++;
        }
    case '"':
        return skip_string(p);
    case 't':
        return skip_literal(p, "true");
    case 'f':
        return skip_literal(p, "false");
    case 'n':
        return skip_literal(p, "null");
    default:
        return skip_number(p);
    }
}

/*
 * If text is one valid JSON object (surrounding whitespace allowed), returns
 * its opening brace; otherwise NULL.
 */
static const char* json_object_root(const char* text)
{
    if (text == NULL)
        return NULL;
    const char* root = skip_ws(text);
    if (*root != '{')
        return NULL;
    const char* end = skip_value(root, 0);
    if (end == NULL || *skip_ws(end) != '\0')
        return NULL;
    return root;
}

static void put_utf8(char* out, size_t cap, size_t* len, bool* fits, unsigned long cp)
{
    unsigned char bytes[4];
    size_t n;
    if (cp < 0x80) {
        bytes[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        bytes[0] = (unsigned char)(0xC0 | (cp >> 6));
        bytes[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        bytes[0] = (unsigned char)(0xE0 | (cp >> 12));
        bytes[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        bytes[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        bytes[0] = (unsigned char)(0xF0 | (cp >> 18));
        bytes[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        bytes[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        bytes[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (*len + n >= cap) {
        *fits = false;
        return;
    }
    memcpy(out + *len, bytes, n);
    *len += n;
}

static unsigned long read_hex4(const char* p)
{
    unsigned long v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 4) | (unsigned long)hex_value(p[i]);
    return v;
}

/*
 * Decodes the (already validated) JSON string at p into out, NUL-terminated.
 * Returns false if it does not fit in cap bytes. *len receives the byte
 * length, which may be less than strlen(out) if the text contains \u0000.
 */
static bool decode_string(const char* p, char* out, size_t cap, size_t* len)
{
    bool fits = true;
    size_t n = 0;
    p++; /* the opening quote */
    while (fits && *p != '"') {
        if (*p != '\\') {
            if (n + 1 >= cap)
                fits = false;
            else
                out[n++] = *p;
            p++;
            continue;
        }
        p++;
        char c = *p++;
        unsigned long cp;
        switch (c) {
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            cp = read_hex4(p);
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && p[0] == '\\' && p[1] == 'u') {
                unsigned long low = read_hex4(p + 2);
                if (low >= 0xDC00 && low <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    p += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF)
                cp = 0xFFFD; /* an unpaired surrogate */
            break;
        default: /* '"', '\\' and '/' stand for themselves */
            cp = (unsigned char)c;
            break;
        }
        put_utf8(out, cap, &n, &fits, cp);
    }
    out[n] = '\0';
    *len = n;
    return fits;
}

/* Whether the JSON string at p, decoded, is exactly key. */
static bool string_equals(const char* p, const char* key)
{
    char buf[64];
    size_t len;
    if (!decode_string(p, buf, sizeof buf, &len))
        return false;
    return len == strlen(key) && memcmp(buf, key, len) == 0;
}

/*
 * The value of member `key` in the validated object whose brace is at obj,
 * or NULL if it has none. With duplicate keys the last one wins, as in most
 * JSON parsers.
 */
static const char* json_member(const char* obj, const char* key)
{
    const char* found = NULL;
    const char* p = skip_ws(obj + 1);
    if (*p == '}')
        return NULL;
    for (;;) {
        if (*p != '"')
            return found;
        bool match = string_equals(p, key);
        p = skip_string(p);
        if (p == NULL)
            return found;
        p = skip_ws(p);
        if (*p != ':')
            return found;
        const char* value = skip_ws(p + 1);
        p = skip_value(value, 1);
        if (p == NULL)
            return found;
        if (match)
            found = value;
        p = skip_ws(p);
        if (*p != ',')
            return found;
        p = skip_ws(p + 1);
    }
}

/* ------------------------------------------------------------------------ */
/* Reading the operands                                                     */
/* ------------------------------------------------------------------------ */

typedef enum {
    ARG_OK,
    ARG_MISSING,
    ARG_BAD_STRING, /* a string that does not hold a number */
    ARG_BOOLEAN,
    ARG_NULL,
    ARG_OBJECT,
    ARG_ARRAY,
    ARG_RANGE, /* a number too large for a double */
} arg_status;

/* Reads a number, or a string holding one (" 3 " included), at value. */
static arg_status read_number(const char* value, double* out)
{
    if (value == NULL)
        return ARG_MISSING;
    switch (*value) {
    case '"': {
        char buf[128];
        size_t len;
        if (!decode_string(value, buf, sizeof buf, &len) || len != strlen(buf))
            return ARG_BAD_STRING;
        const char* start = skip_ws(buf);
        const char* end = skip_number(start);
        if (end == NULL || *skip_ws(end) != '\0')
            return ARG_BAD_STRING;
        return parse_json_number(start, (size_t)(end - start), out) ? ARG_OK : ARG_RANGE;
    }
    case 't':
    case 'f':
        return ARG_BOOLEAN;
    case 'n':
        return ARG_NULL;
    case '{':
        return ARG_OBJECT;
    case '[':
        return ARG_ARRAY;
    default: {
        const char* end = skip_number(value);
        if (end == NULL)
            return ARG_BAD_STRING; /* unreachable for validated input */
        return parse_json_number(value, (size_t)(end - value), out) ? ARG_OK : ARG_RANGE;
    }
    }
}

typedef struct {
    bool valid_json; /* call_json was a valid JSON object */
    arg_status a_status, b_status;
    double a, b;
} operands;

static operands read_operands(const char* call_json)
{
    operands ops = { 0 };
    const char* root = json_object_root(call_json);
    ops.valid_json = root != NULL;
    ops.a_status = read_number(root ? json_member(root, "a") : NULL, &ops.a);
    ops.b_status = read_number(root ? json_member(root, "b") : NULL, &ops.b);
    return ops;
}

static void describe_problem(strbuf* sb, const char* name, arg_status status)
{
    if (status == ARG_MISSING) {
        sb_puts(sb, "missing required argument '");
        sb_puts(sb, name);
        sb_puts(sb, "' (a number)");
        return;
    }
    sb_puts(sb, "argument '");
    sb_puts(sb, name);
    switch (status) {
    case ARG_BAD_STRING: sb_puts(sb, "' must be a number, but is a string that does not hold one"); break;
    case ARG_BOOLEAN: sb_puts(sb, "' must be a number, but is a boolean"); break;
    case ARG_NULL: sb_puts(sb, "' must be a number, but is null"); break;
    case ARG_OBJECT: sb_puts(sb, "' must be a number, but is an object"); break;
    case ARG_ARRAY: sb_puts(sb, "' must be a number, but is an array"); break;
    case ARG_RANGE: sb_puts(sb, "' is too large to represent"); break;
    default: sb_puts(sb, "' is invalid"); break;
    }
}

/* {"ok":false} naming the tool and every argument that is wrong. */
static const char* argument_error(const char* tool, const operands* ops)
{
    strbuf msg = { 0 };
    sb_puts(&msg, tool);
    sb_puts(&msg, ": ");
    if (ops->a_status != ARG_OK)
        describe_problem(&msg, "a", ops->a_status);
    if (ops->a_status != ARG_OK && ops->b_status != ARG_OK)
        sb_puts(&msg, "; ");
    if (ops->b_status != ARG_OK)
        describe_problem(&msg, "b", ops->b_status);
    if (!ops->valid_json)
        sb_puts(&msg, " (the arguments were not a valid JSON object)");
    if (msg.failed) {
        free(msg.data);
        return NULL;
    }
    const char* result = envelope_error(msg.data);
    free(msg.data);
    return result;
}

/* ------------------------------------------------------------------------ */
/* The tools                                                                */
/* ------------------------------------------------------------------------ */

typedef enum { OP_ADD, OP_MULTIPLY, OP_DIVIDE, OP_UNKNOWN } operation;

static operation lookup_tool(const char* tool)
{
    if (strcmp(tool, "calc_add") == 0)
        return OP_ADD;
    if (strcmp(tool, "calc_multiply") == 0)
        return OP_MULTIPLY;
    if (strcmp(tool, "calc_divide") == 0)
        return OP_DIVIDE;
    return OP_UNKNOWN;
}

static const char* unknown_tool(const char* tool)
{
    strbuf msg = { 0 };
    sb_puts(&msg, "calculator has no tool named '");
    sb_puts(&msg, tool);
    sb_puts(&msg, "'; it offers calc_add, calc_multiply and calc_divide");
    if (msg.failed) {
        free(msg.data);
        return NULL;
    }
    const char* result = envelope_error(msg.data);
    free(msg.data);
    return result;
}

/* A result with success:false: errorMessage for people, content for the model. */
static const char* tool_failure(const char* error_message, const char* content)
{
    strbuf sb = { 0 };
    sb_puts(&sb, "{\"ok\":true,\"result\":{\"success\":false,\"errorMessage\":");
    sb_json_string(&sb, error_message);
    sb_puts(&sb, ",\"output\":{\"content\":");
    sb_json_string(&sb, content);
    sb_puts(&sb, "}}}");
    return sb_finish(&sb);
}

static const char* calculate(operation op, double a, double b)
{
    static const char* const symbols[] = { "+", "*", "/" };
    const char* symbol = symbols[op];
    char a_text[64], b_text[64], message[256], content[256];
    format_operand(a, a_text);
    format_operand(b, b_text);

    if (op == OP_DIVIDE && b == 0.0) {
        snprintf(message, sizeof message, "division by zero: %s / 0 is undefined", a_text);
        snprintf(content, sizeof content, "Cannot divide %s by zero.", a_text);
        return tool_failure(message, content);
    }

    double answer = op == OP_ADD ? a + b : op == OP_MULTIPLY ? a * b : a / b;
    if (!isfinite(answer)) {
        snprintf(message, sizeof message, "overflow: %s %s %s is too large to represent",
                 a_text, symbol, b_text);
        snprintf(content, sizeof content,
                 "The result of %s %s %s is too large to represent.", a_text, symbol, b_text);
        return tool_failure(message, content);
    }

    char rounded[512], exact[64];
    format_rounded(answer, atomic_load(&g_precision), rounded);
    format_exact(answer, exact);

    strbuf text = { 0 };
    sb_puts(&text, a_text);
    sb_puts(&text, " ");
    sb_puts(&text, symbol);
    sb_puts(&text, " ");
    sb_puts(&text, b_text);
    sb_puts(&text, " = ");
    sb_puts(&text, rounded);

    strbuf sb = { 0 };
    sb_puts(&sb, "{\"ok\":true,\"result\":{\"success\":true,\"output\":{\"content\":");
    sb_json_string(&sb, text.failed ? "" : text.data);
    sb_puts(&sb, ",\"answer\":");
    sb_puts(&sb, exact);
    sb_puts(&sb, "}}}");
    if (text.failed)
        sb.failed = true;
    free(text.data);
    return sb_finish(&sb);
}

/* ------------------------------------------------------------------------ */
/* Exports                                                                  */
/* ------------------------------------------------------------------------ */

CXAGENT_PLUGIN_EXPORT int32_t cxagent_plugin_abi_version(void)
{
    return CALC_CONTRACT; /* the same number as "pluginContract" in MANIFEST */
}

CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_describe(void)
{
    return heap_copy(MANIFEST);
}

/*
 * settings.precision: an integer, clamped to 0..12. Anything else (a string,
 * a fraction, null, no settings at all) quietly means the default.
 */
static int read_precision(const char* context_json)
{
    const char* root = json_object_root(context_json);
    if (root == NULL)
        return PRECISION_DEFAULT;
    const char* settings = json_member(root, "settings");
    if (settings == NULL || *settings != '{')
        return PRECISION_DEFAULT;
    const char* value = json_member(settings, "precision");
    if (value == NULL || (*value != '-' && !is_digit(*value)))
        return PRECISION_DEFAULT;
    const char* end = skip_number(value);
    double d;
    if (end == NULL || !parse_json_number(value, (size_t)(end - value), &d))
        return PRECISION_DEFAULT;
    if (d <= -1e18 || d >= 1e18) /* every double this large is a whole number */
        return d < 0 ? PRECISION_MIN : PRECISION_MAX;
    long long whole = (long long)d;
    if ((double)whole != d)
        return PRECISION_DEFAULT; /* 2.5 */
    if (whole < PRECISION_MIN)
        return PRECISION_MIN;
    if (whole > PRECISION_MAX)
        return PRECISION_MAX;
    return (int)whole;
}

CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_start(const char* context_json)
{
    atomic_store(&g_precision, read_precision(context_json));
    return heap_copy("{\"ok\":true}");
}

CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_invoke(const char* tool_name,
                                                        const char* call_json)
{
    const char* tool = tool_name ? tool_name : "";
    operation op = lookup_tool(tool);
    if (op == OP_UNKNOWN)
        return unknown_tool(tool);

    operands ops = read_operands(call_json);
    if (ops.a_status != ARG_OK || ops.b_status != ARG_OK)
        return argument_error(tool, &ops);
    return calculate(op, ops.a, ops.b);
}

CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_gate(const char* tool_name,
                                                      const char* call_json)
{
    /* Only division has a dangerous case: a zero divisor. */
    if (tool_name == NULL || lookup_tool(tool_name) != OP_DIVIDE)
        return NULL;
    operands ops = read_operands(call_json);
    if (ops.a_status != ARG_OK || ops.b_status != ARG_OK || ops.b != 0.0)
        return NULL; /* fine, or invoke will refuse the arguments anyway */

    char a_text[64], display[128];
    format_operand(ops.a, a_text);
    snprintf(display, sizeof display, "calc_divide: divide %s by zero", a_text);

    /* If memory runs out this returns NULL, which lets the call through: there
       is no allocation-free way to ask, and the division itself is harmless. */
    strbuf sb = { 0 };
    sb_puts(&sb, "{\"display\":");
    sb_json_string(&sb, display);
    sb_puts(&sb, "}");
    return sb_finish(&sb);
}

CXAGENT_PLUGIN_EXPORT const char* cxagent_plugin_stop(void)
{
    return heap_copy("{\"ok\":true}");
}

CXAGENT_PLUGIN_EXPORT void cxagent_plugin_free(const char* ptr)
{
    free((void*)ptr);
}
