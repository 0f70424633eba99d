package money

import "testing"

func TestParseAmount(t *testing.T) {
	tests := []struct {
		in      string
		want    string // canonical text, "" when refused
		wantErr error
	}{
		{"12.50", "12.50", nil},
		{"12.5", "12.5", nil},
		{"0.01", "0.01", nil},
		{"007", "7", nil},
		{"9999999999999999.99", "9999999999999999.99", nil},
		{"", "", errEmptyText},
		{"0", "", errNotPos},
		{"0.00", "", errNotPos},
		{"-1", "", errSyntax},
		{"+1", "", errSyntax},
		{"1e3", "", errSyntax},
		{"NaN", "", errSyntax},
		{"Infinity", "", errSyntax},
		{" 1", "", errSyntax},
		{"1.", "", errSyntax},
		{".5", "", errSyntax},
		{"1.2.3", "", errSyntax},
		{"12.345", "", errFraction},
		{"10000000000000000", "", errTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseAmount(tt.in)
			if err != tt.wantErr {
				t.Fatalf("ParseAmount(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if err == nil && d.String() != tt.want {
				t.Errorf("ParseAmount(%q) = %s, want %s", tt.in, d, tt.want)
			}
		})
	}
}

func TestCheckCurrency(t *testing.T) {
	for in, ok := range map[string]bool{"EUR": true, "USD": true, "eur": false, "EURO": false, "EU": false, "E1R": false, "": false} {
		if got := CheckCurrency(in) == nil; got != ok {
			t.Errorf("CheckCurrency(%q) ok = %v, want %v", in, got, ok)
		}
	}
}
