package sha256sum

import "math/bits"

// roundConstants are K(0)..K(63) of FIPS 180-4 4.2.2: the first 32 bits of
// the fractional parts of the cube roots of the first 64 primes. Read only.
var roundConstants = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

// compress runs the compression function (FIPS 180-4 6.2.2) over each
// whole 64-byte block of p, updating the intermediate hash value state.
func compress(state *[8]uint32, p []byte) {
	var w [64]uint32
	for ; len(p) >= BlockSize; p = p[BlockSize:] {
		// 1. The message schedule.
		for t := range 16 {
			w[t] = uint32(p[4*t])<<24 | uint32(p[4*t+1])<<16 | uint32(p[4*t+2])<<8 | uint32(p[4*t+3])
		}
		for t := 16; t < 64; t++ {
			w[t] = smallSigma1(w[t-2]) + w[t-7] + smallSigma0(w[t-15]) + w[t-16]
		}
		// 2. The working variables.
		a, b, c, d, e, f, g, h := state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7]
		// 3. The 64 rounds.
		for t := range 64 {
			t1 := h + bigSigma1(e) + ch(e, f, g) + roundConstants[t] + w[t]
			t2 := bigSigma0(a) + maj(a, b, c)
			h, g, f = g, f, e
			e = d + t1
			d, c, b = c, b, a
			a = t1 + t2
		}
		// 4. The next intermediate hash value.
		state[0] += a
		state[1] += b
		state[2] += c
		state[3] += d
		state[4] += e
		state[5] += f
		state[6] += g
		state[7] += h
	}
}

// The six logical functions of FIPS 180-4 4.1.2 (ROTR^n is a rotation to
// the right, so a left rotation by -n).

func ch(x, y, z uint32) uint32  { return (x & y) ^ (^x & z) }
func maj(x, y, z uint32) uint32 { return (x & y) ^ (x & z) ^ (y & z) }

func bigSigma0(x uint32) uint32 {
	return bits.RotateLeft32(x, -2) ^ bits.RotateLeft32(x, -13) ^ bits.RotateLeft32(x, -22)
}

func bigSigma1(x uint32) uint32 {
	return bits.RotateLeft32(x, -6) ^ bits.RotateLeft32(x, -11) ^ bits.RotateLeft32(x, -25)
}

func smallSigma0(x uint32) uint32 {
	return bits.RotateLeft32(x, -7) ^ bits.RotateLeft32(x, -18) ^ x>>3
}

func smallSigma1(x uint32) uint32 {
	return bits.RotateLeft32(x, -17) ^ bits.RotateLeft32(x, -19) ^ x>>10
}
