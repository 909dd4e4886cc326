/*
 * Symbol demangling. Names come from untrusted ELF files: input length,
 * output length, recursion depth and total work are all bounded.
 */
#include "demangle.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longer mangled names are left as they are: the demanglers recurse on them. */
#define MAX_MANGLED 4096
#define MAX_DEPTH 64
#define MAX_STEPS 100000

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_init(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);

	if (h)
		cxa_demangle = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

static void copy_out(char *out, size_t outlen, const char *s, size_t n)
{
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, s, n);
	out[n] = 0;
}

/* ---- Rust legacy: Itanium-mangled paths ending in a ::h<16 hex> hash, with $..$ escapes ---- */

static bool is_rust_hash(const char *s, size_t n)
{
	if (n != 17 || s[0] != 'h')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

static const struct {
	const char *esc, *rep;
} rust_escapes[] = {
	{ "$SP$", "@" }, { "$BP$", "*" }, { "$RF$", "&" }, { "$LT$", "<" }, { "$GT$", ">" },
	{ "$LP$", "(" }, { "$RP$", ")" }, { "$C$", "," },  { "$u7e$", "~" }, { "$u20$", " " },
	{ "$u27$", "'" }, { "$u5b$", "[" }, { "$u5d$", "]" }, { "$u7b$", "{" }, { "$u7d$", "}" },
	{ "$u3b$", ";" }, { "$u2b$", "+" }, { "$u22$", "\"" },
};

/* Returns 0 when sym was a Rust legacy name, demangled into out. */
static int rust_legacy(const char *sym, char *out, size_t outlen)
{
	const char *p = sym + 3; /* _ZN */
	size_t o = 0;
	bool first = true, hashed = false;

	while (*p && *p != 'E') {
		size_t n = 0;
		const char *id;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		while (isdigit((unsigned char)*p)) {
			n = n * 10 + (size_t)(*p++ - '0');
			if (n > MAX_MANGLED)
				return -EINVAL;
		}
		if (strnlen(p, n) < n)
			return -EINVAL;
		id = p;
		p += n;
		if (is_rust_hash(id, n) && *p == 'E') {
			hashed = true;
			break;
		}
		if (!first && o + 2 < outlen) {
			out[o++] = ':';
			out[o++] = ':';
		}
		first = false;
		if (n >= 2 && id[0] == '_' && id[1] == '$') {
			id++;
			n--;
		}
		for (size_t i = 0; i < n && o + 1 < outlen;) {
			size_t k;

			if (id[i] == '.' && i + 1 < n && id[i + 1] == '.') {
				out[o++] = ':';
				if (o + 1 < outlen)
					out[o++] = ':';
				i += 2;
				continue;
			}
			if (id[i] == '$') {
				for (k = 0; k < sizeof(rust_escapes) / sizeof(rust_escapes[0]); k++) {
					size_t el = strlen(rust_escapes[k].esc);

					if (i + el <= n && !memcmp(id + i, rust_escapes[k].esc, el)) {
						out[o++] = rust_escapes[k].rep[0];
						i += el;
						break;
					}
				}
				if (k < sizeof(rust_escapes) / sizeof(rust_escapes[0]))
					continue;
			}
			out[o++] = id[i++];
		}
	}
	if (!hashed)
		return -EINVAL;
	out[o] = 0;
	return 0;
}

/* ---- Rust v0 (RFC 2603) ---- */

struct v0 {
	const char *s;
	size_t len, pos;
	char *out;
	size_t outlen, o;
	int depth;
	int quiet; /* > 0: parse without printing */
	unsigned steps;
	bool bad;
};

static void v0_puts(struct v0 *d, const char *s, size_t n)
{
	if (d->quiet)
		return;
	for (size_t i = 0; i < n && d->o + 1 < d->outlen; i++)
		d->out[d->o++] = s[i];
}

static void v0_put(struct v0 *d, const char *s)
{
	v0_puts(d, s, strlen(s));
}

static char v0_peek(struct v0 *d)
{
	return d->pos < d->len ? d->s[d->pos] : 0;
}

static bool v0_eat(struct v0 *d, char c)
{
	if (v0_peek(d) != c)
		return false;
	d->pos++;
	return true;
}

static bool v0_enter(struct v0 *d)
{
	if (d->bad || ++d->depth > MAX_DEPTH || ++d->steps > MAX_STEPS || d->o + 1 >= d->outlen) {
		d->bad = true;
		return false;
	}
	return true;
}

static uint64_t v0_base62(struct v0 *d)
{
	uint64_t x = 0;

	if (v0_eat(d, '_'))
		return 0;
	for (;;) {
		char c = v0_peek(d);
		unsigned v;

		if (c == '_') {
			d->pos++;
			break;
		}
		if (c >= '0' && c <= '9')
			v = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'z')
			v = 10 + (unsigned)(c - 'a');
		else if (c >= 'A' && c <= 'Z')
			v = 36 + (unsigned)(c - 'A');
		else {
			d->bad = true;
			return 0;
		}
		if (x > (UINT64_MAX - v) / 62) {
			d->bad = true;
			return 0;
		}
		x = x * 62 + v;
		d->pos++;
	}
	return x + 1;
}

static uint64_t v0_disambiguator(struct v0 *d)
{
	return v0_eat(d, 's') ? v0_base62(d) + 1 : 0;
}

static void v0_ident(struct v0 *d, bool print)
{
	bool puny = v0_eat(d, 'u');
	size_t n = 0;

	if (!isdigit((unsigned char)v0_peek(d))) {
		d->bad = true;
		return;
	}
	while (isdigit((unsigned char)v0_peek(d))) {
		n = n * 10 + (size_t)(d->s[d->pos++] - '0');
		if (n > d->len) {
			d->bad = true;
			return;
		}
	}
	v0_eat(d, '_');
	if (n > d->len - d->pos) {
		d->bad = true;
		return;
	}
	if (print) {
		if (puny)
			v0_put(d, "punycode{");
		v0_puts(d, d->s + d->pos, n);
		if (puny)
			v0_put(d, "}");
	}
	d->pos += n;
}

static void v0_path(struct v0 *d, bool in_value);
static void v0_type(struct v0 *d);

/* Follows a backref: parse what it points at, then continue after it. */
static void v0_backref(struct v0 *d, void (*fn)(struct v0 *, bool), bool arg)
{
	size_t start = d->pos - 1;
	uint64_t target = v0_base62(d);
	size_t saved = d->pos;

	/* Offsets count from after "_R" (d->s starts there); a backref only points backwards. */
	if (d->bad || target >= start) {
		d->bad = true;
		return;
	}
	d->pos = (size_t)target;
	fn(d, arg);
	d->pos = saved;
}

static void v0_type_thunk(struct v0 *d, bool unused)
{
	v0_type(d);
}

static void v0_lifetime(struct v0 *d)
{
	v0_base62(d);
	v0_put(d, "'_");
}

static void v0_const(struct v0 *d, bool unused)
{
	if (!v0_enter(d))
		return;
	if (v0_eat(d, 'p')) {
		v0_put(d, "_");
	} else if (v0_eat(d, 'B')) {
		v0_backref(d, v0_const, false);
	} else {
		char t = v0_peek(d);

		if (!t || !strchr("abchijlmnostxy", t)) {
			d->bad = true;
		} else {
			bool neg;
			size_t st;

			d->pos++;
			neg = v0_eat(d, 'n');
			st = d->pos;
			while (isxdigit((unsigned char)v0_peek(d)))
				d->pos++;
			if (!v0_eat(d, '_')) {
				d->bad = true;
			} else if (t == 'b') {
				v0_put(d, d->pos - st == 2 && d->s[st] == '1' ? "true" : "false");
			} else {
				if (neg)
					v0_put(d, "-");
				v0_put(d, "0x");
				v0_puts(d, d->s + st, d->pos - st - 1);
			}
		}
	}
	d->depth--;
}

/*
 * Steps through a list that ends in 'E' (generic arguments, tuple and fn
 * parameters, dyn bounds): true while an element follows, with sep printed
 * before every element but the first. A list the name ends inside is bad.
 */
static bool v0_list_next(struct v0 *d, bool *first, const char *sep)
{
	if (d->bad || v0_eat(d, 'E'))
		return false;
	if (d->pos >= d->len) {
		d->bad = true;
		return false;
	}
	if (!*first)
		v0_put(d, sep);
	*first = false;
	return true;
}

static void v0_generic_args(struct v0 *d)
{
	for (bool first = true; v0_list_next(d, &first, ", ");) {
		if (v0_eat(d, 'L'))
			v0_lifetime(d);
		else if (v0_eat(d, 'K'))
			v0_const(d, false);
		else
			v0_type(d);
	}
}

static const char *v0_basic(char c)
{
	switch (c) {
	case 'a': return "i8";
	case 'b': return "bool";
	case 'c': return "char";
	case 'd': return "f64";
	case 'e': return "str";
	case 'f': return "f32";
	case 'h': return "u8";
	case 'i': return "isize";
	case 'j': return "usize";
	case 'l': return "i32";
	case 'm': return "u32";
	case 'n': return "i128";
	case 'o': return "u128";
	case 's': return "i16";
	case 't': return "u16";
	case 'u': return "()";
	case 'v': return "...";
	case 'x': return "i64";
	case 'y': return "u64";
	case 'z': return "!";
	case 'p': return "_";
	default: return NULL;
	}
}

static void v0_type(struct v0 *d)
{
	const char *b;
	char c;

	if (!v0_enter(d))
		return;
	c = v0_peek(d);
	if (!c) {
		d->bad = true;
		goto out;
	}
	b = v0_basic(c);
	if (b) {
		d->pos++;
		v0_put(d, b);
		goto out;
	}
	d->pos++;
	switch (c) {
	case 'R':
	case 'Q':
		v0_put(d, c == 'R' ? "&" : "&mut ");
		if (v0_eat(d, 'L')) {
			uint64_t l = v0_base62(d);

			if (l)
				v0_put(d, "'_ ");
		}
		v0_type(d);
		break;
	case 'P':
	case 'O':
		v0_put(d, c == 'P' ? "*const " : "*mut ");
		v0_type(d);
		break;
	case 'A':
		v0_put(d, "[");
		v0_type(d);
		v0_put(d, "; ");
		v0_const(d, false);
		v0_put(d, "]");
		break;
	case 'S':
		v0_put(d, "[");
		v0_type(d);
		v0_put(d, "]");
		break;
	case 'T':
		v0_put(d, "(");
		for (bool first = true; v0_list_next(d, &first, ", ");)
			v0_type(d);
		v0_put(d, ")");
		break;
	case 'F':
		if (v0_eat(d, 'G'))
			v0_base62(d);
		if (v0_eat(d, 'U'))
			v0_put(d, "unsafe ");
		if (v0_eat(d, 'K')) {
			v0_put(d, "extern \"");
			if (v0_eat(d, 'C'))
				v0_put(d, "C");
			else
				v0_ident(d, true);
			v0_put(d, "\" ");
		}
		v0_put(d, "fn(");
		for (bool first = true; v0_list_next(d, &first, ", ");)
			v0_type(d);
		v0_put(d, ")");
		if (v0_peek(d) == 'u') {
			d->pos++;
		} else {
			v0_put(d, " -> ");
			v0_type(d);
		}
		break;
	case 'D':
		v0_put(d, "dyn ");
		if (v0_eat(d, 'G'))
			v0_base62(d);
		for (bool first = true; v0_list_next(d, &first, " + ");) {
			v0_path(d, false);
			while (!d->bad && v0_eat(d, 'p')) {
				v0_put(d, "<");
				v0_ident(d, true);
				v0_put(d, " = ");
				v0_type(d);
				v0_put(d, ">");
			}
		}
		if (v0_eat(d, 'L'))
			v0_base62(d);
		else
			d->bad = true;
		break;
	case 'B':
		v0_backref(d, v0_type_thunk, false);
		break;
	default:
		d->pos--;
		v0_path(d, false);
		break;
	}
out:
	d->depth--;
}

/* Parses an identifier, printing it as ":name" when non-empty (closures, shims). */
static void v0_ident_tagged(struct v0 *d)
{
	bool puny = v0_peek(d) == 'u';
	size_t n = 0, p = d->pos + (puny ? 1 : 0);

	while (p < d->len && isdigit((unsigned char)d->s[p]) && n <= d->len)
		n = n * 10 + (size_t)(d->s[p++] - '0');
	if (n)
		v0_put(d, ":");
	v0_ident(d, true);
}

static void v0_path(struct v0 *d, bool in_value)
{
	char c;

	if (!v0_enter(d))
		return;
	c = v0_peek(d);
	if (!c) {
		d->bad = true;
		d->depth--;
		return;
	}
	d->pos++;
	switch (c) {
	case 'C':
		v0_disambiguator(d);
		v0_ident(d, true);
		break;
	case 'M':
	case 'X':
		/* The impl's own path says where it is written; rustc-demangle does not show it. */
		v0_disambiguator(d);
		d->quiet++;
		v0_path(d, false);
		d->quiet--;
		v0_put(d, "<");
		v0_type(d);
		if (c == 'X') {
			v0_put(d, " as ");
			v0_path(d, false);
		}
		v0_put(d, ">");
		break;
	case 'Y':
		v0_put(d, "<");
		v0_type(d);
		v0_put(d, " as ");
		v0_path(d, false);
		v0_put(d, ">");
		break;
	case 'N': {
		char ns = v0_peek(d), num[32];
		uint64_t dis;

		if (!isalpha((unsigned char)ns)) {
			d->bad = true;
			break;
		}
		d->pos++;
		v0_path(d, in_value);
		dis = v0_disambiguator(d);
		if (ns >= 'A' && ns <= 'Z') {
			char tag[2] = { ns, 0 };

			v0_put(d, "::{");
			v0_put(d, ns == 'C' ? "closure" : ns == 'S' ? "shim" : tag);
			v0_ident_tagged(d);
			snprintf(num, sizeof(num), "#%llu}", (unsigned long long)dis);
			v0_put(d, num);
		} else {
			v0_put(d, "::");
			v0_ident(d, true);
		}
		break;
	}
	case 'I':
		v0_path(d, in_value);
		v0_put(d, in_value ? "::<" : "<");
		v0_generic_args(d);
		v0_put(d, ">");
		break;
	case 'B':
		v0_backref(d, v0_path, in_value);
		break;
	default:
		d->bad = true;
		break;
	}
	d->depth--;
}

static int rust_v0(const char *sym, char *out, size_t outlen)
{
	struct v0 d = { .s = sym + 2, .len = strlen(sym) - 2, .out = out, .outlen = outlen };

	/* An encoding version number precedes the path when the encoding changes; we know none. */
	if (isdigit((unsigned char)v0_peek(&d)))
		return -EINVAL;
	v0_path(&d, true);
	/* An instantiating crate may follow; a vendor suffix (".llvm.123") is dropped. */
	if (d.bad || (d.pos < d.len && d.s[d.pos] != '.' && !isupper((unsigned char)d.s[d.pos])))
		return -EINVAL;
	out[d.o] = 0;
	return 0;
}

int demangle(const char *sym, char *out, size_t outlen)
{
	size_t n = strnlen(sym, MAX_MANGLED + 1);
	char *r;
	int status = -1;

	if (outlen == 0 || n > MAX_MANGLED)
		return -EINVAL;
	if (n > 2 && sym[0] == '_' && sym[1] == 'R' && isupper((unsigned char)sym[2]))
		return rust_v0(sym, out, outlen);
	if (n < 3 || sym[0] != '_' || sym[1] != 'Z')
		return -EINVAL;
	if (sym[2] == 'N' && rust_legacy(sym, out, outlen) == 0)
		return 0;
	pthread_once(&cxa_once, cxa_init);
	if (!cxa_demangle)
		return -EINVAL;
	r = cxa_demangle(sym, NULL, NULL, &status);
	if (status == -1)
		return -ENOMEM;
	if (!r || status != 0) {
		free(r);
		return -EINVAL;
	}
	copy_out(out, outlen, r, strlen(r));
	free(r);
	return 0;
}
