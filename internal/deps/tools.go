//go:build tools

package deps
