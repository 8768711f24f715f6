// SlotCosts: what a jobserver slot is charged, before and after a family taught it (docs/jobserver.md).
#include <gtest/gtest.h>

#include "headroom/admission/slot_costs.h"
#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

TEST(SlotCostsTest, UntaughtFamilyChargesTheJobsOwnPeakPerSlot) {
  SlotCosts costs;
  EXPECT_EQ(2 * kGiB, costs.CostPerSlot("nvcc|sm_90", 2 * kGiB));
  costs.SetSlots(1, "nvcc|sm_90", 2 * kGiB, 2);
  EXPECT_EQ(4 * kGiB, costs.Charge(1));
  EXPECT_EQ(2u, costs.Slots(1));
  costs.SetSlots(1, "nvcc|sm_90", 2 * kGiB, 1);  // one given back
  EXPECT_EQ(2 * kGiB, costs.Charge(1));
  EXPECT_EQ(2u, costs.MaxSlots(1));
  EXPECT_EQ(0u, costs.Charge(99));  // a job without slots costs nothing extra
}

TEST(SlotCostsTest, AJobThatHeldSlotsTeachesItsFamily) {
  SlotCosts costs;
  costs.SetSlots(1, "nvcc", 3 * kGiB, 3);
  costs.SetSlots(1, "nvcc", 3 * kGiB, 1);
  costs.JobEnded(1, 6 * kGiB);  // peaked at 6 GiB with at most 3 extra slots: 4 pipelines of 1.5 GiB
  EXPECT_EQ(6 * kGiB / 4, costs.Learned("nvcc"));
  EXPECT_EQ(6 * kGiB / 4, costs.CostPerSlot("nvcc", 3 * kGiB));
  EXPECT_EQ(0u, costs.Charge(1));  // ended: nothing charged any more
  // A later job of the family is charged at the learned figure, fixed when it first gets a slot.
  costs.SetSlots(2, "nvcc", 3 * kGiB, 2);
  EXPECT_EQ(2 * (6 * kGiB / 4), costs.Charge(2));
  // The family keeps the largest figure; a job that never held a slot teaches nothing.
  costs.JobEnded(2, 2 * kGiB);
  EXPECT_EQ(6 * kGiB / 4, costs.Learned("nvcc"));
  costs.SetSlots(3, "cc", kGiB, 0);
  costs.JobEnded(3, 8 * kGiB);
  EXPECT_EQ(0u, costs.Learned("cc"));
}

}  // namespace
}  // namespace headroom
