package idempotency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Limits on JSON numbers. apd represents 1e1000000000 cheaply, but a number
// that size is an attack, not an amount, and parsing a megabyte of digits
// costs quadratic time.
const (
	// maxNumberDigits caps the digits of a number's mantissa as written.
	maxNumberDigits = 1000
	// maxNumberExponent caps the magnitude of a non-zero number: the
	// exponent of its most significant digit, whatever the spelling.
	maxNumberExponent = 10000
)

// appendNumber writes the number that starts at i and returns the offset
// after it.
func (c *canonicaliser) appendNumber(i int) (int, error) {
	end := skipNumber(c.body, i)
	lit := c.body[i:end]
	var err error
	if c.num, err = appendCanonicalNumber(c.num[:0], lit); err != nil {
		return 0, ErrBodyMalformed.because(err, "%v at byte %d", err, i)
	}
	c.out = append(c.out, tagNumber)
	c.out = binary.AppendUvarint(c.out, uint64(len(c.num)))
	c.out = append(c.out, c.num...)
	return end, nil
}

// appendCanonicalNumber appends canonicalNumber(lit) to dst. A literal
// without an exponent, which is what amounts look like, is done by moving
// digits, without apd or an allocation; the result is the same (the
// differential tests check it against canonicalNumber).
func appendCanonicalNumber(dst, lit []byte) ([]byte, error) {
	for _, b := range lit {
		if b == 'e' || b == 'E' {
			s, err := canonicalNumber(string(lit))
			return append(dst, s...), err
		}
	}
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	dot := len(digits)
	for j, b := range digits {
		if b == '.' {
			dot = j
			break
		}
	}
	frac := 0
	if dot < len(digits) {
		frac = len(digits) - dot - 1
	}
	if d := dot + frac; d > maxNumberDigits {
		return dst, fmt.Errorf("number with %d digits, more than %d", d, maxNumberDigits)
	}
	// The coefficient is the digits without the dot, leading zeros and
	// trailing zeros; each trailing zero moves the exponent up by one.
	start := len(dst)
	if neg {
		dst = append(dst, '-')
	}
	sig := len(dst)
	for _, b := range digits {
		if b == '.' || (b == '0' && len(dst) == sig) {
			continue
		}
		dst = append(dst, b)
	}
	if len(dst) == sig {
		return append(dst[:start], '0'), nil // every zero is one amount
	}
	exp := -frac
	for dst[len(dst)-1] == '0' {
		dst = dst[:len(dst)-1]
		exp++
	}
	dst = append(dst, 'e')
	return strconv.AppendInt(dst, int64(exp), 10), nil
}

// canonicalNumber returns the canonical text of a JSON number literal: the
// sign, the coefficient without trailing zeros, "e" and the exponent, so that
// 100, 100.00, 1e2 and 1.0E+2 all give "1e2". Every zero gives "0". The
// format is our own rather than apd's, so that an apd upgrade cannot change
// stored fingerprints.
func canonicalNumber(lit string) (string, error) {
	mant := lit
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
	}
	if d := len(mant) - strings.Count(mant, "-") - strings.Count(mant, "."); d > maxNumberDigits {
		return "", fmt.Errorf("number with %d digits, more than %d", d, maxNumberDigits)
	}
	var d apd.Decimal
	if _, _, err := d.SetString(lit); err != nil {
		// apd refuses exponents beyond its own ±100000.
		return "", errors.New("number out of range")
	}
	if d.IsZero() {
		// apd keeps the sign and exponent of a zero; -0, 0.0 and 0e5 are
		// one amount.
		return "0", nil
	}
	var r apd.Decimal
	r.Reduce(&d)
	if adj := int64(r.Exponent) + r.NumDigits() - 1; adj > maxNumberExponent || adj < -maxNumberExponent {
		return "", fmt.Errorf("number with exponent %d, beyond ±%d", adj, maxNumberExponent)
	}
	sign := ""
	if r.Negative {
		sign = "-"
	}
	return sign + r.Coeff.String() + "e" + strconv.Itoa(int(r.Exponent)), nil
}
