package auth

import "crypto/rand"

// randomPassword is 32 random bytes: a password nobody knows.
func randomPassword() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}
