// Owns the stacks of children that run on headroom's memory until their exec (prepared children, spawn residents):
// small slots packed into shared pages, so that dozens of waiting children add kilobytes to headroom's RSS, not a
// page or more apiece.
#pragma once

#include <cstddef>

namespace headroom {

// Each such child makes only raw system calls from a few small frames (a few hundred bytes in all; the unit tests
// hold ChildStackHighWaterBytes below half a slot). No signal frame is ever pushed there: the children block every
// signal, and a prepared child unblocks them only after resetting every handler to the default.
inline constexpr size_t kChildStackSlotBytes = 1024;

// A slot, as its top (16-byte aligned, where the stack starts); nullptr when no memory could be mapped.
void* AcquireChildStack();
// Gives back the slot whose top is `top`, once its child has exec'd or been reaped: it is measured and cleared for
// the next child.
void GiveBackChildStack(void* top);
// The most bytes any child has used of its slot so far, measured when slots are given back.
size_t ChildStackHighWaterBytes();

}  // namespace headroom
