package sha256sum

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestVectorsOfTheStandard(t *testing.T) {
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"448 bits", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{"one million a", strings.Repeat("a", 1_000_000), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := Sum256([]byte(tc.msg))
			if got := hex.EncodeToString(sum[:]); got != tc.want {
				t.Errorf("Sum256 = %s, want %s", got, tc.want)
			}
			h := New()
			for i := 0; i < len(tc.msg); i += 7 { // writes that straddle block ends
				h.Write([]byte(tc.msg[i:min(i+7, len(tc.msg))]))
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != tc.want {
				t.Errorf("New+Write in 7-byte chunks = %s, want %s", got, tc.want)
			}
		})
	}
}

// The constants are the ones FIPS 180-4 derives from the primes: computed
// here again from that definition with 200-bit arithmetic.
func TestConstantsFromTheirDefinition(t *testing.T) {
	var primes []int64
	for n := int64(2); len(primes) < 64; n++ {
		prime := true
		for _, p := range primes {
			if n%p == 0 {
				prime = false
				break
			}
		}
		if prime {
			primes = append(primes, n)
		}
	}
	const prec = 200
	fraction32 := func(x *big.Float) uint32 {
		whole, _ := x.Int(nil)
		frac := new(big.Float).SetPrec(prec).Sub(x, new(big.Float).SetInt(whole))
		frac.SetMantExp(frac, 32)
		v, _ := frac.Uint64()
		return uint32(v)
	}
	var d digest
	d.Reset()
	for i, p := range primes[:8] {
		root := new(big.Float).SetPrec(prec).Sqrt(new(big.Float).SetPrec(prec).SetInt64(p))
		if want := fraction32(root); d.h[i] != want {
			t.Errorf("H(0)[%d] = %#08x, want %#08x (square root of %d)", i, d.h[i], want, p)
		}
	}
	for i, p := range primes {
		// Newton's method for the cube root: x ← (2x + p/x²) / 3.
		pf := new(big.Float).SetPrec(prec).SetInt64(p)
		x := new(big.Float).SetPrec(prec).SetFloat64(math.Cbrt(float64(p)))
		for range 10 {
			x2 := new(big.Float).SetPrec(prec).Mul(x, x)
			q := new(big.Float).SetPrec(prec).Quo(pf, x2)
			x.Add(new(big.Float).SetPrec(prec).Add(x, x), q)
			x.Quo(x, new(big.Float).SetPrec(prec).SetInt64(3))
		}
		if want := fraction32(x); roundConstants[i] != want {
			t.Errorf("K[%d] = %#08x, want %#08x (cube root of %d)", i, roundConstants[i], want, p)
		}
	}
}

func TestEveryLengthUpTo300(t *testing.T) {
	data := randomBytes(1, 300)
	for n := 0; n <= 300; n++ {
		want := sha256.Sum256(data[:n])
		if got := Sum256(data[:n]); got != want {
			t.Fatalf("length %d: Sum256 = %x, want %x", n, got, want)
		}
		h := New()
		for i := range n { // one byte at a time
			h.Write(data[i : i+1])
		}
		if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Fatalf("length %d, bytewise: Sum = %x, want %x", n, got, want)
		}
	}
}

// Lengths on both sides of block boundaries and of the padding's 56-byte
// limit, from one block to 4 MiB.
func TestAroundBlockBoundaries(t *testing.T) {
	data := randomBytes(2, 4<<20+BlockSize)
	for blocks := 1; blocks <= 4<<20/BlockSize; blocks *= 4 {
		for _, delta := range []int{-9, -8, -1, 0, 1, 55, 56, 57} {
			n := blocks*BlockSize + delta
			if got, want := Sum256(data[:n]), sha256.Sum256(data[:n]); got != want {
				t.Errorf("length %d: Sum256 = %x, want %x", n, got, want)
			}
		}
	}
}

// The digest of every prefix, taken with Sum while writing goes on.
func TestSumWhileWriting(t *testing.T) {
	data := randomBytes(3, 3<<20)
	mine, std := New(), sha256.New()
	r := rand.New(rand.NewPCG(3, 3))
	for off := 0; off < len(data); {
		n := min(len(data)-off, r.IntN(3*BlockSize)+1)
		if r.IntN(16) == 0 {
			n = min(len(data)-off, r.IntN(256<<10))
		}
		mine.Write(data[off : off+n])
		std.Write(data[off : off+n])
		off += n
		if got, want := mine.Sum(nil), std.Sum(nil); !bytes.Equal(got, want) {
			t.Fatalf("after %d bytes: Sum = %x, want %x", off, got, want)
		}
	}
}

func TestRandomChunkings(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 7))
		data := randomBytes(seed, r.IntN(20_000))
		want := sha256.Sum256(data)
		h := New()
		var sizes []int
		for off := 0; off < len(data); {
			n := min(len(data)-off, r.IntN(200))
			h.Write(data[off : off+n])
			sizes = append(sizes, n)
			off += n
		}
		if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Errorf("seed %d, %d bytes in writes of %v: Sum = %x, want %x", seed, len(data), sizes, got, want)
		}
	}
}

func TestSumTwiceAppendsAndWriteAfterSum(t *testing.T) {
	h := New()
	h.Write([]byte("hello, "))
	first := h.Sum(nil)
	prefix := []byte("prefix")
	second := h.Sum(prefix)
	if !bytes.Equal(second[:len(prefix)], []byte("prefix")) || !bytes.Equal(second[len(prefix):], first) {
		t.Fatalf("Sum(prefix) = %x, want prefix followed by %x", second, first)
	}
	if want := sha256.Sum256([]byte("hello, ")); !bytes.Equal(first, want[:]) {
		t.Fatalf("Sum = %x, want %x", first, want)
	}
	h.Write([]byte("world"))
	if got, want := h.Sum(nil), sha256.Sum256([]byte("hello, world")); !bytes.Equal(got, want[:]) {
		t.Fatalf("Write after Sum: Sum = %x, want %x", got, want)
	}
}

func TestReset(t *testing.T) {
	h := New()
	h.Write(randomBytes(4, 1000)) // leaves bytes of an incomplete block behind
	h.Reset()
	h.Write([]byte("abc"))
	if got, want := h.Sum(nil), sha256.Sum256([]byte("abc")); !bytes.Equal(got, want[:]) {
		t.Fatalf("after Reset: Sum = %x, want %x", got, want)
	}
	if h.Size() != Size || h.BlockSize() != BlockSize || Size != sha256.Size || BlockSize != sha256.BlockSize {
		t.Fatalf("Size %d, BlockSize %d; crypto/sha256 has %d, %d", h.Size(), h.BlockSize(), sha256.Size, sha256.BlockSize)
	}
}

func FuzzAgainstCryptoSHA256(f *testing.F) {
	f.Add([]byte(""), uint16(0))
	f.Add([]byte("abc"), uint16(1))
	f.Add(bytes.Repeat([]byte{0xff}, 119), uint16(55))
	f.Add(randomBytes(5, 1000), uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		want := sha256.Sum256(data)
		if got := Sum256(data); got != want {
			t.Fatalf("Sum256(%x) = %x, want %x", data, got, want)
		}
		c := 0
		if len(data) > 0 {
			c = int(cut) % (len(data) + 1)
		}
		h := New()
		h.Write(data[:c])
		h.Write(data[c:])
		if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Fatalf("writes of %d and %d bytes of %x: Sum = %x, want %x", c, len(data)-c, data, got, want)
		}
	})
}

// BenchmarkWrite compares this package with crypto/sha256 (which uses the
// CPU's SHA extensions or assembly where it can).
func BenchmarkWrite(b *testing.B) {
	for _, size := range []int{64, 1 << 10, 64 << 10} {
		data := randomBytes(6, size)
		for _, impl := range []struct {
			name string
			sum  func([]byte) [Size]byte
		}{{"sha256sum", Sum256}, {"crypto-sha256", sha256.Sum256}} {
			b.Run(fmt.Sprintf("%s/%dB", impl.name, size), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					impl.sum(data)
				}
			})
		}
	}
}
