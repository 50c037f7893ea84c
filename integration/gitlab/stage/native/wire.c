/* The encodings of wire.go: a Request (stage → agent) and a Started
 * (agent → stage), counts and lengths as encoding/binary's varints. */
#include "stage.h"

#include <string.h>

static size_t uvarint_size(uint64_t v)
{
	size_t n = 1;
	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

static unsigned char *put_uvarint(unsigned char *b, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		*b++ = (unsigned char)(v | 0x80);
	*b++ = (unsigned char)v;
	return b;
}

static size_t string_size(const char *s)
{
	size_t n = strlen(s);
	return uvarint_size(n) + n;
}

static unsigned char *put_string(unsigned char *b, const char *s)
{
	size_t n = strlen(s);
	b = put_uvarint(b, n);
	memcpy(b, s, n);
	return b + n;
}

/* request_size is the length of the Request's encoding. */
size_t request_size(char **args, size_t nargs, const struct env *e, const char *dir)
{
	size_t n = uvarint_size(nargs) + uvarint_size(e->n) + string_size(dir);
	for (size_t i = 0; i < nargs; i++)
		n += string_size(args[i]);
	for (size_t i = 0; i < e->n; i++)
		n += string_size(e->v[i]);
	return n;
}

/* request_encode writes the Request's encoding (request_size bytes) to b:
 * Args and Env as a count and that many strings, then Dir. */
void request_encode(unsigned char *b, char **args, size_t nargs, const struct env *e, const char *dir)
{
	b = put_uvarint(b, nargs);
	for (size_t i = 0; i < nargs; i++)
		b = put_string(b, args[i]);
	b = put_uvarint(b, e->n);
	for (size_t i = 0; i < e->n; i++)
		b = put_string(b, e->v[i]);
	put_string(b, dir);
}

/* uvarint is encoding/binary's Uvarint: the value and the bytes it took,
 * 0 when p is cut short or the value overflows. */
static size_t uvarint(struct bytes p, uint64_t *v)
{
	uint64_t x = 0;
	unsigned s = 0;
	for (size_t i = 0; i < p.n; i++) {
		unsigned char b = (unsigned char)p.p[i];
		if (i == 10)
			return 0;
		if (b < 0x80) {
			if (i == 9 && b > 1)
				return 0;
			*v = x | (uint64_t)b << s;
			return i + 1;
		}
		x |= (uint64_t)(b & 0x7f) << s;
		s += 7;
	}
	return 0;
}

/* started_decode decodes a Started: Job (a length, its bytes), From (a
 * zig-zag varint), nothing after. */
bool started_decode(struct bytes p, struct bytes *job, int64_t *from)
{
	uint64_t n, u;
	size_t k = uvarint(p, &n);
	if (k == 0 || n > p.n - k)
		return false;
	job->p = p.p + k;
	job->n = (size_t)n;
	struct bytes rest = {p.p + k + n, p.n - k - (size_t)n};
	k = uvarint(rest, &u);
	if (k == 0 || k != rest.n)
		return false;
	*from = (int64_t)(u >> 1);
	if (u & 1)
		*from = ~*from;
	return true;
}
