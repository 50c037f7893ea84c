// Package sha256sum computes SHA-256 as FIPS 180-4 (section 6.2) defines it,
// in plain Go: no assembly, no unsafe, nothing but math/bits and hash.
//
// The shim checks delivered files with it instead of crypto/sha256, which
// links Go's whole FIPS 140 module (AES, GCM, a DRBG, SHA-3, SHA-512,
// HMAC) and costs the shim's binary and resident memory far more than a
// checksum of scripts needs. It is not constant-time and not meant for
// secrets; it produces the same digests as crypto/sha256.
package sha256sum

import "hash"

// Size is the length of a SHA-256 digest in bytes.
const Size = 32

// BlockSize is the block length of SHA-256 in bytes.
const BlockSize = 64

// digest is the running state of one hash: the eight working words H, the
// bytes of an incomplete block and the message length so far.
type digest struct {
	h    [8]uint32
	buf  [BlockSize]byte
	nbuf int    // bytes waiting in buf, always < BlockSize
	n    uint64 // message length in bytes
}

// New returns a SHA-256 hash.Hash. Write never fails; Sum does not change
// the state, so writing may go on after it.
func New() hash.Hash {
	d := &digest{}
	d.Reset()
	return d
}

// Sum256 returns the SHA-256 digest of data.
func Sum256(data []byte) [Size]byte {
	var d digest
	d.Reset()
	d.Write(data)
	return d.checkSum()
}

// Reset sets the state to the initial hash value H(0) (FIPS 180-4 5.3.3:
// the first 32 bits of the fractional parts of the square roots of the
// first eight primes).
func (d *digest) Reset() {
	d.h = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}
	d.nbuf = 0
	d.n = 0
}

// Size returns Size.
func (d *digest) Size() int { return Size }

// BlockSize returns BlockSize.
func (d *digest) BlockSize() int { return BlockSize }

// Write adds p to the message. It never returns an error.
func (d *digest) Write(p []byte) (int, error) {
	written := len(p)
	d.n += uint64(written)
	if d.nbuf > 0 {
		c := copy(d.buf[d.nbuf:], p)
		d.nbuf += c
		p = p[c:]
		if d.nbuf < BlockSize {
			return written, nil
		}
		compress(&d.h, d.buf[:])
		d.nbuf = 0
	}
	if whole := len(p) &^ (BlockSize - 1); whole > 0 {
		compress(&d.h, p[:whole])
		p = p[whole:]
	}
	d.nbuf = copy(d.buf[:], p)
	return written, nil
}

// Sum appends the digest of the message so far to b; the state is unchanged.
func (d *digest) Sum(b []byte) []byte {
	final := *d
	sum := final.checkSum()
	return append(b, sum[:]...)
}

// checkSum pads the message (FIPS 180-4 5.1.1: a 1 bit, zeros up to 56
// bytes into the last block, the length in bits as 64-bit big-endian) and
// returns H as big-endian bytes. It consumes d.
func (d *digest) checkSum() [Size]byte {
	bitLen := d.n << 3
	var pad [BlockSize + 8]byte
	pad[0] = 0x80
	padLen := 56 - int(d.n%BlockSize)
	if padLen <= 0 {
		padLen += BlockSize
	}
	for i := range 8 {
		pad[padLen+i] = byte(bitLen >> (56 - 8*i))
	}
	d.Write(pad[:padLen+8])
	var out [Size]byte
	for i, v := range d.h {
		out[4*i] = byte(v >> 24)
		out[4*i+1] = byte(v >> 16)
		out[4*i+2] = byte(v >> 8)
		out[4*i+3] = byte(v)
	}
	return out
}
