#include "textflag.h"

// func gather32(dst, src *uint32, idx *int32, n int, last uint32) bool
//
// dst[i] = src[idx[i]] for i < n, eight at a time with VPGATHERDD, after checking that every
// index of the eight is at most last (compared unsigned: a negative index is out of range);
// false, at the first block or element with an index out of range, having gathered nothing
// from it.
TEXT ·gather32(SB), NOSPLIT, $0-41
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         idx+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVL         last+32(FP), R8
	MOVQ         R8, X5
	VPBROADCASTD X5, Y5

loop32:
	CMPQ       CX, $8
	JL         tail32
	VMOVDQU    (DX), Y1
	VPMINUD    Y5, Y1, Y3
	VPCMPEQD   Y1, Y3, Y4
	VPMOVMSKB  Y4, AX
	CMPL       AX, $-1
	JNE        bad
	VPCMPEQD   Y2, Y2, Y2
	VPGATHERDD Y2, (SI)(Y1*4), Y0
	VMOVDQU    Y0, (DI)
	ADDQ       $32, DX
	ADDQ       $32, DI
	SUBQ       $8, CX
	JMP        loop32

tail32:
	TESTQ CX, CX
	JZ    ok
	MOVL  (DX), AX
	CMPL  AX, R8
	JA    bad
	MOVL  (SI)(AX*4), BX
	MOVL  BX, (DI)
	ADDQ  $4, DX
	ADDQ  $4, DI
	DECQ  CX
	JMP   tail32

ok:
	VZEROUPPER
	MOVB $1, ret+40(FP)
	RET

bad:
	VZEROUPPER
	MOVB $0, ret+40(FP)
	RET

// func gather64(dst, src *uint64, idx *int32, n int, last uint32) bool
//
// As gather32 for 8-byte elements, four at a time with VPGATHERDQ.
TEXT ·gather64(SB), NOSPLIT, $0-41
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         idx+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVL         last+32(FP), R8
	MOVQ         R8, X5
	VPBROADCASTD X5, X5

loop64:
	CMPQ       CX, $4
	JL         tail64
	VMOVDQU    (DX), X1
	VPMINUD    X5, X1, X3
	VPCMPEQD   X1, X3, X4
	VPMOVMSKB  X4, AX
	CMPL       AX, $0xffff
	JNE        bad64
	VPCMPEQQ   Y2, Y2, Y2
	VPGATHERDQ Y2, (SI)(X1*8), Y0
	VMOVDQU    Y0, (DI)
	ADDQ       $16, DX
	ADDQ       $32, DI
	SUBQ       $4, CX
	JMP        loop64

tail64:
	TESTQ CX, CX
	JZ    ok64
	MOVL  (DX), AX
	CMPL  AX, R8
	JA    bad64
	MOVQ  (SI)(AX*8), BX
	MOVQ  BX, (DI)
	ADDQ  $4, DX
	ADDQ  $8, DI
	DECQ  CX
	JMP   tail64

ok64:
	VZEROUPPER
	MOVB $1, ret+40(FP)
	RET

bad64:
	VZEROUPPER
	MOVB $0, ret+40(FP)
	RET
