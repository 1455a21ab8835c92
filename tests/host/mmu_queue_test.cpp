// The batched backend's update queue (hypercalls/mmu_queue.h) against a fake
// hypercall sink: when it sends, in what order, and what it reports when Xen
// refuses part of a send.
#include "host_compat.h"

#include "hypercalls/mmu_queue.h"

namespace pvk::test {
namespace {

using xen::MmuQueue;
using xen::MmuSink;
using xen::SinkResult;

// One send as the sink saw it.
struct Send {
  std::vector<mmu_update_t> updates;
  std::vector<mmuext_op_t> ext;
};

// The sink is a plain function pointer (as the kernel's is): the fake keeps
// its state in one place the tests reset.
struct FakeSink {
  std::vector<Send> sends;
  // Refuse the update at this position of the next send (-1: accept all).
  int fail_update_at = -1;
  long fail_rc = -22;
  int fail_ext_at = -1;
};
FakeSink g_sink;

SinkResult fake_send(mmu_update_t* u, unsigned nu, mmuext_op_t* e, unsigned ne) {
  Send s;
  s.updates.assign(u, u + nu);
  s.ext.assign(e, e + ne);
  g_sink.sends.push_back(s);
  SinkResult r;
  r.updates_done = nu;
  r.ext_done = ne;
  if (g_sink.fail_update_at >= 0 && unsigned(g_sink.fail_update_at) < nu) {
    r.update_rc = g_sink.fail_rc;
    r.updates_done = unsigned(g_sink.fail_update_at);
    g_sink.fail_update_at = -1;
  }
  if (g_sink.fail_ext_at >= 0 && unsigned(g_sink.fail_ext_at) < ne) {
    r.ext_rc = g_sink.fail_rc;
    r.ext_done = unsigned(g_sink.fail_ext_at);
    g_sink.fail_ext_at = -1;
  }
  return r;
}

mmuext_op_t flush_op(uint64_t va) {
  mmuext_op_t op{};
  op.cmd = MMUEXT_INVLPG_LOCAL;
  op.arg1.linear_addr = va;
  return op;
}

class MmuQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_sink = FakeSink{};
    queue_ = std::make_unique<MmuQueue>();
  }
  MmuQueue& q() { return *queue_; }
  std::unique_ptr<MmuQueue> queue_;  // big: keep it off the stack
};

TEST_F(MmuQueueTest, SendsWhenTheQueueReachesItsCapacity) {
  q().init(MmuSink{&fake_send}, 4);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_FALSE(q().push_update(0x1000 + 8 * i, i).is_error());
  EXPECT_TRUE(g_sink.sends.empty()) << "nothing goes out before the queue is full";
  EXPECT_FALSE(q().push_update(0x1018, 3).is_error());
  ASSERT_EQ(g_sink.sends.size(), 1u);
  EXPECT_EQ(g_sink.sends[0].updates.size(), 4u);
  EXPECT_EQ(q().pending_updates(), 0u);
}

TEST_F(MmuQueueTest, FlushSendsWhatIsQueuedAndNothingWhenEmpty) {
  q().init(MmuSink{&fake_send}, 32);
  EXPECT_FALSE(q().flush().is_error());
  EXPECT_TRUE(g_sink.sends.empty()) << "an empty flush is not a hypercall";
  EXPECT_FALSE(q().push_update(0x2000, 7).is_error());
  EXPECT_FALSE(q().flush().is_error());
  ASSERT_EQ(g_sink.sends.size(), 1u);
  EXPECT_EQ(g_sink.sends[0].updates[0].ptr, 0x2000u);
  EXPECT_EQ(g_sink.sends[0].updates[0].val, 7u);
}

TEST_F(MmuQueueTest, CapacityIsClampedToWhatTheQueueHolds) {
  q().init(MmuSink{&fake_send}, 0);
  EXPECT_EQ(q().capacity(), 1u);
  q().init(MmuSink{&fake_send}, 100000);
  EXPECT_EQ(q().capacity(), MmuQueue::kMaxUpdates);
}

TEST_F(MmuQueueTest, UpdatesAndTheirFlushesGoOutTogetherInProgramOrder) {
  q().init(MmuSink{&fake_send}, 32);
  EXPECT_FALSE(q().push_update(0x10, 1).is_error());
  EXPECT_FALSE(q().push_update(0x18, 2).is_error());
  EXPECT_FALSE(q().push_ext(flush_op(0x400000)).is_error());
  EXPECT_FALSE(q().flush().is_error());
  ASSERT_EQ(g_sink.sends.size(), 1u) << "one send (a multicall) carries both";
  EXPECT_EQ(g_sink.sends[0].updates.size(), 2u);
  ASSERT_EQ(g_sink.sends[0].ext.size(), 1u);
  EXPECT_EQ(g_sink.sends[0].ext[0].arg1.linear_addr, 0x400000u);
}

TEST_F(MmuQueueTest, AnUpdateAfterAQueuedOpSendsTheOpFirst) {
  // A multicall runs its updates before its ops, so an update queued after
  // an op must not overtake it.
  q().init(MmuSink{&fake_send}, 32);
  EXPECT_FALSE(q().push_update(0x10, 1).is_error());
  EXPECT_FALSE(q().push_ext(flush_op(0x1000)).is_error());
  EXPECT_FALSE(q().push_update(0x18, 2).is_error());
  ASSERT_EQ(g_sink.sends.size(), 1u);
  EXPECT_EQ(g_sink.sends[0].updates.size(), 1u);
  EXPECT_EQ(g_sink.sends[0].ext.size(), 1u);
  EXPECT_EQ(q().pending_updates(), 1u);
  EXPECT_EQ(q().pending_ext(), 0u);
}

TEST_F(MmuQueueTest, TooManyOpsSendTheQueueEarly) {
  q().init(MmuSink{&fake_send}, 32);
  for (unsigned i = 0; i < MmuQueue::kMaxExt + 1; ++i) EXPECT_FALSE(q().push_ext(flush_op(i << 12)).is_error());
  ASSERT_EQ(g_sink.sends.size(), 1u);
  EXPECT_EQ(g_sink.sends[0].ext.size(), MmuQueue::kMaxExt);
  EXPECT_EQ(q().pending_ext(), 1u);
}

TEST_F(MmuQueueTest, APartialFailureNamesTheRefusedRequestAndDropsTheRest) {
  q().init(MmuSink{&fake_send}, 8);
  g_sink.fail_update_at = 5;
  g_sink.fail_rc = -16;
  for (uint64_t i = 0; i < 7; ++i) EXPECT_FALSE(q().push_update(0x3000 + 8 * i, 100 + i).is_error());
  auto r = q().push_update(0x3038, 107);  // the 8th fills the queue and sends
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.error(), Errno::EBUSY) << "Xen's -16 comes back as EBUSY";
  const auto& f = q().last_failure();
  EXPECT_TRUE(f.is_update);
  EXPECT_EQ(f.index, 5u);
  EXPECT_EQ(f.rc, -16);
  EXPECT_EQ(f.ptr, 0x3000u + 8 * 5);
  EXPECT_EQ(f.val, 105u);
  EXPECT_EQ(q().pending_updates(), 0u) << "the rest of the send is dropped, not retried";
  // The queue keeps working afterwards.
  EXPECT_FALSE(q().push_update(0x4000, 1).is_error());
  EXPECT_FALSE(q().flush().is_error());
  EXPECT_EQ(g_sink.sends.size(), 2u);
}

// A section that must complete sends again exactly what Xen did not apply:
// the refused update, the ones after it and the send's ops, in order.
TEST_F(MmuQueueTest, RequeueRefusedSendsTheUnappliedSuffixAgain) {
  q().init(MmuSink{&fake_send}, 8);
  for (uint64_t i = 0; i < 5; ++i) ASSERT_FALSE(q().push_update(0x2000 + 8 * i, i).is_error());
  ASSERT_FALSE(q().push_ext(flush_op(0x7000)).is_error());
  g_sink.fail_update_at = 2;
  ASSERT_TRUE(q().flush().is_error());
  q().requeue_refused();
  EXPECT_EQ(q().pending_updates(), 3u);
  EXPECT_EQ(q().pending_ext(), 1u);
  ASSERT_FALSE(q().flush().is_error());
  ASSERT_EQ(g_sink.sends.size(), 2u);
  const Send& again = g_sink.sends[1];
  ASSERT_EQ(again.updates.size(), 3u);
  for (unsigned k = 0; k < 3; ++k) EXPECT_EQ(again.updates[k].val, 2u + k);
  ASSERT_EQ(again.ext.size(), 1u);
  EXPECT_EQ(again.ext[0].arg1.linear_addr, 0x7000u);

  // A refused op: only it and the ops after it go again.
  ASSERT_FALSE(q().push_ext(flush_op(0x8000)).is_error());
  ASSERT_FALSE(q().push_ext(flush_op(0x9000)).is_error());
  g_sink.fail_ext_at = 1;
  ASSERT_TRUE(q().flush().is_error());
  q().requeue_refused();
  EXPECT_EQ(q().pending_updates(), 0u);
  ASSERT_EQ(q().pending_ext(), 1u);
  ASSERT_FALSE(q().flush().is_error());
  ASSERT_EQ(g_sink.sends.back().ext.size(), 1u);
  EXPECT_EQ(g_sink.sends.back().ext[0].arg1.linear_addr, 0x9000u);
}

TEST_F(MmuQueueTest, ARefusedOpIsReportedWithItsCommand) {
  q().init(MmuSink{&fake_send}, 8);
  g_sink.fail_ext_at = 1;
  EXPECT_FALSE(q().push_ext(flush_op(0x1000)).is_error());
  EXPECT_FALSE(q().push_ext(flush_op(0x2000)).is_error());
  auto r = q().flush();
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.error(), Errno::EINVAL);
  EXPECT_FALSE(q().last_failure().is_update);
  EXPECT_EQ(q().last_failure().index, 1u);
  EXPECT_EQ(q().last_failure().ptr, uint64_t{MMUEXT_INVLPG_LOCAL});
  EXPECT_EQ(q().last_failure().val, 0x2000u);
}

TEST(XenErrno, MapsXenErrorsToKernelErrors) {
  EXPECT_EQ(xen::errno_from_xen(-1), Errno::EPERM);
  EXPECT_EQ(xen::errno_from_xen(-12), Errno::ENOMEM);
  EXPECT_EQ(xen::errno_from_xen(-22), Errno::EINVAL);
  EXPECT_EQ(xen::errno_from_xen(-9999), Errno::EIO) << "anything unknown is an I/O error, never success";
}

}  // namespace
}  // namespace pvk::test
