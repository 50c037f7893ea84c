package shim

import "strings"

// urlEscape percent-encodes s the way url.QueryEscape (query) or
// url.PathEscape (!query) does, so masking finds a secret in URLs without
// the shim linking net/url (which brings net/netip and unique: about 60 KB
// of binary and of an idle shim's RSS). Letters, digits and -_.~ stay; a
// path segment also keeps $&+:=@; a query turns a space into '+'; every
// other byte becomes %XX (upper-case hex).
func urlEscape(s string, query bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case keptInURL(c, query):
			b.WriteByte(c)
		case c == ' ' && query:
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
	}
	return b.String()
}

// keptInURL reports whether urlEscape keeps c as it is.
func keptInURL(c byte, query bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	case c == '-', c == '_', c == '.', c == '~':
		return true
	}
	return !query && strings.IndexByte("$&+:=@", c) >= 0
}
