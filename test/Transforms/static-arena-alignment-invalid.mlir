// RUN: vram-opt %s --verify-diagnostics \
// RUN:   --pass-pipeline="builtin.module(func.func(vram-static-arena{alignment=48}))"

// expected-error @below {{vram-static-arena: alignment 48 is not a power of two}}
func.func @f() {
  return
}
