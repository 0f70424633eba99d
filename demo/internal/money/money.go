// Package money validates the amounts and currencies the demo services
// accept: amounts are positive plain decimal strings, parsed with apd so no
// value ever passes through a float.
package money

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"
)

// MaxIntegerDigits bounds the integer part of an amount so that it fits the
// NUMERIC(18,2) column of the payments table.
const MaxIntegerDigits = 16

// MaxFractionDigits is the number of minor-unit digits an amount may carry.
const MaxFractionDigits = 2

var (
	errSyntax    = errors.New("must be a plain decimal string such as \"12.50\"")
	errNotPos    = errors.New("must be greater than zero")
	errFraction  = fmt.Errorf("must have at most %d fraction digits", MaxFractionDigits)
	errTooLarge  = fmt.Errorf("must have at most %d integer digits", MaxIntegerDigits)
	errCurrency  = errors.New("must be three upper-case letters (ISO 4217), such as \"EUR\"")
	errEmptyText = errors.New("is required")
)

// ParseAmount parses a positive amount such as "12.50": digits, at most one
// point, at most MaxFractionDigits fraction digits and MaxIntegerDigits
// integer digits. Signs, exponents, spaces, NaN and infinities are refused.
// The error text completes a sentence that starts with the field name.
func ParseAmount(s string) (*apd.Decimal, error) {
	if s == "" {
		return nil, errEmptyText
	}
	point, intDigits, leading := -1, 0, true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if point < 0 && !(leading && c == '0') {
				leading = false
				intDigits++
			}
		case c == '.' && point < 0 && i > 0 && i < len(s)-1:
			point = i
		default:
			return nil, errSyntax
		}
	}
	if point >= 0 && len(s)-point-1 > MaxFractionDigits {
		return nil, errFraction
	}
	if intDigits > MaxIntegerDigits {
		return nil, errTooLarge
	}
	d, _, err := apd.NewFromString(s)
	if err != nil || d.Form != apd.Finite {
		return nil, errSyntax
	}
	if d.Sign() <= 0 {
		return nil, errNotPos
	}
	return d, nil
}

// CheckCurrency accepts exactly three upper-case ASCII letters.
func CheckCurrency(s string) error {
	if len(s) != 3 {
		return errCurrency
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return errCurrency
		}
	}
	return nil
}
