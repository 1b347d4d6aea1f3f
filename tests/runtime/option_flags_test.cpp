// Messages that name an API option name the program's flag beside it.
#include "tenax/runtime/option_flags.hpp"

#include <gtest/gtest.h>

namespace tenax::runtime {
namespace {

const OptionFlags kFlags{{"TrainerOptions::detect_anomaly", "--detect-anomaly"},
                         {"RunnerOptions::keep_last", "--keep-last"},
                         {"the learning rate", "--lr"}};

TEST(OptionFlags, NamesTheFlagBesideEachMention) {
  EXPECT_EQ(with_flags("set TrainerOptions::detect_anomaly to name the op; lower the learning "
                       "rate",
                       kFlags),
            "set TrainerOptions::detect_anomaly (--detect-anomaly) to name the op; lower the "
            "learning rate (--lr)");
  EXPECT_EQ(with_flags("lower the learning rate, or the learning rate.", kFlags),
            "lower the learning rate (--lr), or the learning rate (--lr).");
  EXPECT_EQ(with_flags("RunnerOptions::keep_last", kFlags),
            "RunnerOptions::keep_last (--keep-last)");
}

TEST(OptionFlags, LeavesOtherWordsAndNamedMentionsAlone) {
  // A longer identifier is not a mention; nor is an option that already names its flag.
  EXPECT_EQ(with_flags("RunnerOptions::keep_last_two and xTrainerOptions::detect_anomaly", kFlags),
            "RunnerOptions::keep_last_two and xTrainerOptions::detect_anomaly");
  EXPECT_EQ(with_flags("RunnerOptions::keep_last (--keep-last) is 0", kFlags),
            "RunnerOptions::keep_last (--keep-last) is 0");
  EXPECT_EQ(with_flags("nothing to name", kFlags), "nothing to name");
  EXPECT_EQ(with_flags("", kFlags), "");
  EXPECT_EQ(with_flags("RunnerOptions::keep_last", {}), "RunnerOptions::keep_last");
  // Empty entries never loop or insert.
  EXPECT_EQ(with_flags("abc", {{"", "--x"}, {"abc", ""}}), "abc");
}

}  // namespace
}  // namespace tenax::runtime
