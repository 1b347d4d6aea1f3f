// Run configurations on resume: free keys change with a notice, safe keys only when allowed,
// every other change is refused with every changed key listed; another program's run directory,
// a bad --allow-config-change and stored configurations that are empty, hostile or not flat are
// refused with a clear message; ConfigWriter writes numbers that read back exactly.
#include "tenax/io/run_config.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax::io {
namespace {

const ConfigPolicy kHeat{.free_keys = {"steps"}, .safe_keys = {"courant", "solver_tol"}};
const std::string kStored =
    R"({"program":"heat2d","n":40,"steps":60,"alpha":1.0,"courant":0.9,"solver_tol":1e-10,)"
    R"("initial":"sine"})";
constexpr const char* kRunDir = "runs/h";

// "cause | fix" of the UsageError that check_resume_config throws.
std::string refusal(const std::string& stored, const std::string& current,
                    const ConfigPolicy& policy = kHeat) {
  try {
    (void)check_resume_config(stored, current, policy, kRunDir);
  } catch (const UsageError& e) {
    return e.cause() + " | " + e.fix();
  }
  ADD_FAILURE() << "accepted: " << current;
  return "";
}

std::string heat(const std::string& replace_from, const std::string& replace_to) {
  std::string text = kStored;
  const std::size_t at = text.find(replace_from);
  EXPECT_NE(at, std::string::npos) << replace_from;
  return text.replace(at, replace_from.size(), replace_to);
}

void expect_parts(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing from\n"
                                                     << message;
  }
}

TEST(RunConfig, TheSameConfigurationResumesWithNothingToReport) {
  EXPECT_TRUE(check_resume_config(kStored, kStored, kHeat, kRunDir).empty());
  // Key order and number spelling do not matter, values do.
  const std::string reordered =
      R"({"initial":"sine","solver_tol":1e-10,"courant":0.9,"alpha":1,"steps":60,"n":40,)"
      R"("program":"heat2d"})";
  EXPECT_TRUE(check_resume_config(kStored, reordered, kHeat, kRunDir).empty());
}

TEST(RunConfig, AFreeKeyChangeIsAcceptedAndReturned) {
  const std::vector<ConfigChange> changes =
      check_resume_config(kStored, heat("\"steps\":60", "\"steps\":200"), kHeat, kRunDir);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].key, "steps");
  EXPECT_EQ(changes[0].old_value, "60");
  EXPECT_EQ(changes[0].new_value, "200");
  EXPECT_FALSE(changes[0].allowed);
}

TEST(RunConfig, ASafeKeyChangesOnlyWhenAllowed) {
  const std::string current = heat("\"courant\":0.9", "\"courant\":0.45");
  expect_parts(refusal(kStored, current),
               {"resuming run directory runs/h with a configuration that differs from its "
                "checkpoint's: courant: 0.9 -> 0.45",
                "courant is safe to change", "pass --allow-config-change courant to accept it",
                "or use a new --run-dir"});
  ConfigPolicy allowed = kHeat;
  allowed.allowed = {"courant"};
  const std::vector<ConfigChange> changes = check_resume_config(kStored, current, allowed, kRunDir);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].key, "courant");
  EXPECT_EQ(changes[0].old_value, "0.9");
  EXPECT_EQ(changes[0].new_value, "0.45");
  EXPECT_TRUE(changes[0].allowed);
}

TEST(RunConfig, ARefusedChangeListsEveryChangedKeyAndNamesTheSafeOnes) {
  std::string current = heat("\"alpha\":1.0", "\"alpha\":2.5");
  current = current.replace(current.find("\"steps\":60"), 10, "\"steps\":80");
  current = current.replace(current.find("\"courant\":0.9"), 13, "\"courant\":0.5");
  current = current.replace(current.find("\"sine\""), 6, "\"gauss\"");
  ConfigPolicy policy = kHeat;
  policy.allowed = {"courant"};  // allowed, yet the run is still refused for alpha and initial
  const std::string message = refusal(kStored, current, policy);
  expect_parts(message, {"steps: 60 -> 80", "alpha: 1.0 -> 2.5", "courant: 0.9 -> 0.5",
                         "initial: \"sine\" -> \"gauss\"",
                         "alpha, initial cannot change when a run of heat2d resumes",
                         "use a new --run-dir", "resume with the stored value of alpha, initial"});
  // Without the flag, the fix names courant as the one that may change with it.
  expect_parts(refusal(kStored, current),
               {"of the changed keys, courant is safe to change: pass --allow-config-change "
                "courant"});
  // With no safe key among the changes, the fix says so.
  expect_parts(refusal(kStored, heat("\"n\":40", "\"n\":41")),
               {"n: 40 -> 41", "none of the changed keys is safe to change"});
}

TEST(RunConfig, AddedAndRemovedKeysAreChanges) {
  expect_parts(refusal(kStored, heat("\"n\":40,", "\"n\":40,\"scheme\":\"cn\",")),
               {"scheme: (absent) -> \"cn\"", "scheme cannot change"});
  expect_parts(refusal(kStored, heat("\"n\":40,", "")), {"n: 40 -> (absent)"});
  const std::vector<ConfigChange> added =
      check_resume_config(heat(",\"steps\":60", ""), kStored, kHeat, kRunDir);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].old_value, "(absent)");
}

TEST(RunConfig, ARunDirectoryOfAnotherProgramIsRefusedNamingIt) {
  const std::string message = refusal(R"({"program":"train_mlp","steps":60})", kStored);
  expect_parts(message, {"run directory runs/h was written by train_mlp, not heat2d",
                         "pass another --run-dir"});
  // A hostile program name is shown escaped and short.
  const std::string hostile =
      refusal("{\"program\":\"x\\u001b[2J" + std::string(1000, 'y') + "\"}", kStored);
  EXPECT_EQ(hostile.find('\x1b'), std::string::npos);
  EXPECT_LT(hostile.size(), 600u) << hostile;
}

TEST(RunConfig, AnAllowedKeyMustBeSafeAndInTheConfiguration) {
  ConfigPolicy policy = kHeat;
  policy.allowed = {"alpha"};
  expect_parts(refusal(kStored, kStored, policy),
               {"--allow-config-change alpha: alpha cannot change when a run of heat2d resumes",
                "the keys --allow-config-change accepts for heat2d are courant, solver_tol"});
  EXPECT_THROW(check_allowed_changes(kStored, policy), UsageError);
  policy.allowed = {"curant"};
  expect_parts(refusal(kStored, kStored, policy),
               {"the configuration of heat2d has no key curant",
                "its keys are program, n, steps, alpha, courant, solver_tol, initial"});
  // A free key needs no flag; naming it is harmless.
  policy.allowed = {"steps", "courant"};
  EXPECT_NO_THROW(check_allowed_changes(kStored, policy));
  EXPECT_NO_THROW((void)check_resume_config(kStored, kStored, policy, kRunDir));
  // A program with no safe keys says so.
  const ConfigPolicy none{.free_keys = {"steps"}, .allowed = {"n"}};
  try {
    check_allowed_changes(kStored, none);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(e.fix().find("heat2d has no keys that --allow-config-change accepts"),
              std::string::npos)
        << e.fix();
  }
  // A key both free and safe is a mistake of the program.
  const ConfigPolicy both{.free_keys = {"steps"}, .safe_keys = {"steps"}};
  EXPECT_THROW(check_allowed_changes(kStored, both), UsageError);
  // Nothing to check against.
  EXPECT_NO_THROW(check_allowed_changes("", ConfigPolicy{}));
  EXPECT_THROW(check_allowed_changes("", ConfigPolicy{.allowed = {"steps"}}), UsageError);
}

TEST(RunConfig, AStoredConfigurationThatIsEmptyIsRefusedClearly) {
  for (const std::string empty : {"", "   \n"}) {
    expect_parts(refusal(empty, kStored),
                 {"run directory runs/h holds a checkpoint without a configuration",
                  "start over in a new --run-dir"});
  }
}

TEST(RunConfig, HostileStoredConfigurationsAreRefusedWithoutACrash) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "not valid JSON"},
      {"{\"a\":1,}", "not valid JSON"},
      {"{} trailing", "not valid JSON"},
      {"[1,2]", "is a JSON array, not an object"},
      {"42", "is a single JSON number, not an object"},
      {"\"text\"", "is a single JSON string, not an object"},
      {"null", "is a single JSON null, not an object"},
      {R"({"program":"heat2d","a":{"b":1}})", "the value of key a is an object"},
      {R"({"program":"heat2d","a":[1]})", "the value of key a is an array"},
      {R"({"program":"heat2d","n":40,"n":41})", "the key n appears twice"},
      {std::string(200000, '['), "more than the 65536"},
      {std::string(60000, '[') + std::string(60000, ']'), "more than the 65536"},
      {std::string(30000, '[') + std::string(30000, ']'), "is a JSON array"},
      {"{\"a\":\"\xff\xfe\"}", "not valid JSON"},
      {std::string("{\"a\":1}\0{\"b\":2}", 15), "NUL byte at byte 7"},
  };
  for (const auto& [stored, expected] : cases) {
    const std::string message = refusal(stored, kStored);
    expect_parts(message, {"the configuration stored in run directory runs/h cannot be read",
                           expected, "start over in a new --run-dir"});
    EXPECT_LT(message.size(), 600u) << message;
  }
}

TEST(RunConfig, HugeValuesAndStrangeKeysAreShownShortAndEscaped) {
  const std::string huge(50000, 'v');
  const std::string stored = R"({"program":"heat2d","data":")" + huge + "\"}";
  const std::string message = refusal(stored, R"({"program":"heat2d","data":"small"})");
  expect_parts(message, {"data: \"vvvv", "... (50002 bytes) -> \"small\""});
  EXPECT_LT(message.size(), 600u);
  const std::string odd_key =
      refusal(R"({"program":"heat2d","a\nb\u001b":1})", R"({"program":"heat2d","a\nb\u001b":2})");
  expect_parts(odd_key, {R"("a\nb\u001b": 1 -> 2)"});
  EXPECT_EQ(odd_key.find('\x1b'), std::string::npos);
}

TEST(RunConfig, TheCurrentConfigurationMustBeAFlatObjectToo) {
  expect_parts(refusal(kStored, R"({"program":"heat2d","a":{"b":1}})"),
               {"the configuration this program gives for its run is not a flat JSON object",
                "ConfigWriter"});
  expect_parts(refusal(kStored, ""), {"not a flat JSON object: it is empty"});
}

TEST(RunConfig, WriterRecordsValuesThatReadBackExactly) {
  ConfigWriter writer("heat2d");
  writer.set("n", 40)
      .set("seed", std::uint64_t{18446744073709551615u})
      .set("negative", std::int64_t{-7})
      .set("alpha", 1e-7)
      .set("third", 1.0 / 3.0)
      .set("whole", 2.0)
      .set("on", true)
      .set("name", std::string("a\"b\\c\nd"))
      .set("path", "/tmp/x.mtx")
      .set("nan", std::numeric_limits<double>::quiet_NaN())
      .set("inf", -std::numeric_limits<double>::infinity());
  const std::string text = writer.text();
  EXPECT_EQ(text, R"({"program":"heat2d","n":40,"seed":18446744073709551615,"negative":-7,)"
                  R"("alpha":1e-07,"third":0.3333333333333333,"whole":2.0,"on":true,)"
                  R"("name":"a\"b\\c\nd","path":"/tmp/x.mtx","nan":"nan","inf":"-inf"})");
  EXPECT_TRUE(check_resume_config(text, text, {}, kRunDir).empty());
  // A change in the last bit of a double is a change (std::to_string would have hidden it).
  const std::string nudged = ConfigWriter("heat2d").set("alpha", std::nextafter(1e-7, 1.0)).text();
  expect_parts(refusal(ConfigWriter("heat2d").set("alpha", 1e-7).text(), nudged),
               {"alpha: 1e-07 -> 1.0000000000000001e-07"});
  EXPECT_THROW(ConfigWriter("x").set("a", 1).set("a", 2), UsageError);
  EXPECT_THROW(ConfigWriter("x").set("", 1), UsageError);
  EXPECT_THROW(ConfigWriter("x").set("program", "y"), UsageError);
}

}  // namespace
}  // namespace tenax::io
