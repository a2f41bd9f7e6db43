package errs

import "testing"

func TestCheckUTF8(t *testing.T) {
	if err := CheckUTF8("héllo", "x"); err != nil {
		t.Errorf("valid string: %v", err)
	}
	err := CheckUTF8("ok\xff\x41", "parameter 1 of row 2")
	if CategoryOf(err) != InvalidInput || err.Error() != "Invalid utf8mb4 character string: 'FF41' in parameter 1 of row 2" {
		t.Errorf("invalid string: %v", err)
	}
	if err := CheckUTF8("\xf0\x9f", ""); err == nil || err.Error() != "Invalid utf8mb4 character string: 'F09F'" {
		t.Errorf("truncated character: %v", err)
	}
}
