// The app layer's settings: each declared once gives its flag, its check (the flag, the value,
// what is expected, the fix), its place in --help and --print-config, the stored configuration
// and the resume policy; values come from the defaults, --config FILE, TENAX_ARGS and the
// command line, later ones winning. Every refusal is a UsageError naming what to change.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tenax/app/app.hpp"
#include "tenax/app/training_settings.hpp"
#include "tenax/core/error.hpp"

namespace tenax::app {
namespace {

namespace fs = std::filesystem;

// Parses `args` (after the program's name) into `app`; returns parse()'s code.
int parse(App& app, std::vector<std::string> args) {
  std::vector<const char*> argv{"job"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return app.parse(static_cast<int>(argv.size()), argv.data());
}

// The UsageError's text when `args` are refused ("" when they are not).
std::string refusal(App& app, std::vector<std::string> args) {
  try {
    parse(app, std::move(args));
  } catch (const UsageError& e) {
    return e.cause() + " -- fix: " + e.fix();
  }
  return "";
}

class Settings : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("TENAX_ARGS");
    dir_ = fs::temp_directory_path() / ("tenax-settings-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    ::unsetenv("TENAX_ARGS");
    fs::remove_all(dir_);
  }
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }
  fs::path dir_;
};

TEST_F(Settings, ValuesOfEveryTypeAreReadFromTheCommandLine) {
  App app("job", "a test job", {.steps = 10});
  auto& n = app.setting("n", std::int64_t{8}, "points").at_least(1);
  auto& rate = app.setting("rate", 0.5, "a rate").above(0.0);
  auto& name = app.setting("shape", "sine", "a shape").one_of({"sine", "gauss"});
  auto& on = app.setting("fast", false, "a switch");
  auto& seed = app.setting("seed", std::uint64_t{1}, "a seed");
  auto& count = app.setting("count", 3, "an int").at_most(10);
  EXPECT_EQ(parse(app, {"--n", "64", "--rate=0.25", "--shape", "gauss", "--fast", "--seed",
                        "18446744073709551615", "--count", "-4", "--steps", "30"}),
            -1);
  EXPECT_EQ(n(), 64);
  EXPECT_EQ(rate(), 0.25);
  EXPECT_EQ(name(), "gauss");
  EXPECT_TRUE(on());
  EXPECT_EQ(seed(), 18446744073709551615ull);
  EXPECT_EQ(count(), -4);
  EXPECT_EQ((*app.standard().steps)(), 30);
  EXPECT_EQ(n.source(), Source::command_line);
  EXPECT_EQ(n.given(), "--n 64");
}

TEST_F(Settings, ASwitchIsSetByItsFlagAndClearedByNoOrFalse) {
  App app("job", "a test job");
  auto& shuffle = app.setting("shuffle", true, "visit the data shuffled");
  auto& fast = app.setting("fast", false, "a switch");
  ASSERT_EQ(parse(app, {"--no-shuffle", "--fast=false"}), -1);
  EXPECT_FALSE(shuffle());
  EXPECT_FALSE(fast());
  EXPECT_EQ(shuffle.given(), "--no-shuffle");
  EXPECT_NE(app.help_text().find("--shuffle, --no-shuffle"), std::string::npos);
  App other("job", "a test job");
  (void)other.setting("n", std::int64_t{1}, "not a switch");
  EXPECT_NE(refusal(other, {"--no-n"}).find("unknown flag --no-n"), std::string::npos);
}

TEST_F(Settings, BadValuesAreRefusedNamingTheFlagTheValueAndTheExpectation) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases{
      {{"--n", "0"}, "--n 0: expected an integer >= 1 -- fix: give --n an integer >= 1"},
      {{"--n", "-5"}, "--n -5: expected an integer >= 1"},
      {{"--n", "abc"}, "--n abc: 'abc' is not an integer"},
      {{"--n", "1.5"}, "'1.5' is not an integer"},
      {{"--n", "1e30"}, "'1e30' is outside the integers this setting holds"},
      {{"--n", "99999999999999999999"}, "is outside the integers this setting holds"},
      {{"--rate", "nan"}, "--rate nan: 'nan' is not a finite number"},
      {{"--rate", "inf"}, "'inf' is not a finite number"},
      {{"--rate", "0"}, "--rate 0: expected a finite number in (0, 1]"},
      {{"--rate", "2"}, "expected a finite number in (0, 1]"},
      {{"--shape", "square"}, "--shape square: not one of sine, gauss"},
      {{"--fast=maybe"}, "'maybe' is not true or false"},
      {{"--n"}, "--n was given no value -- fix: give --n an integer >= 1"},
      {{"--n", "--rate", "0.5"}, "--n was given no value"},
      {{"--stesp", "3"}, "unknown flag --stesp -- fix: did you mean --steps?"},
      {{"--zzzzzz", "3"}, "unknown flag --zzzzzz -- fix: see job --help"},
      {{"positional"}, "unexpected argument 'positional'"},
      {{"--steps", "0"}, "--steps 0: expected an integer >= 1"},
      {{"--comm-timeout", "-1"}, "--comm-timeout -1: expected a finite number in [0.01, 604800]"},
      {{"--progress", "loud"}, "--progress loud: not one of auto, terminal, log, quiet"},
      {{"--allow-config-change", "a,,b"}, "an empty name in the list 'a,,b'"},
      {{"--allow-config-change", "n"}, "--allow-config-change n: n cannot change"},
  };
  for (const Case& c : cases) {
    App app("job", "a test job");
    (void)app.setting("n", std::int64_t{8}, "points").at_least(1);
    (void)app.setting("rate", 0.5, "a rate").above(0.0).at_most(1.0);
    (void)app.setting("shape", "sine", "a shape").one_of({"sine", "gauss"});
    (void)app.setting("fast", false, "a switch");
    const std::string message = refusal(app, c.args);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "args " << ::testing::PrintToString(c.args) << " gave: " << message;
  }
}

TEST_F(Settings, LaterSourcesWinDefaultThenFileThenEnvironmentThenCommandLine) {
  const fs::path file = write("job.conf",
                              "# a comment\n\n"
                              "n = 16\n"
                              "rate = 0.125   # trailing comment\n"
                              "shape = \"gauss\"\n"
                              "steps = 7\n");
  ::setenv("TENAX_ARGS", "--rate 0.0625 --steps=9", 1);
  App app("job", "a test job");
  auto& n = app.setting("n", std::int64_t{8}, "points");
  auto& rate = app.setting("rate", 0.5, "a rate");
  auto& shape = app.setting("shape", "sine", "a shape");
  auto& untouched = app.setting("untouched", 3.0, "not given");
  ASSERT_EQ(parse(app, {"--config", file.string(), "--steps", "11"}), -1);
  EXPECT_EQ(n(), 16);
  EXPECT_EQ(n.source(), Source::file);
  EXPECT_EQ(shape(), "gauss");
  EXPECT_EQ(rate(), 0.0625);
  EXPECT_EQ(rate.source(), Source::environment);
  EXPECT_EQ((*app.standard().steps)(), 11);
  EXPECT_EQ(untouched.source(), Source::default_value);
  EXPECT_NE(n.given().find("job.conf line 3"), std::string::npos) << n.given();
}

TEST_F(Settings, PrintConfigWritesAFileThatSetsEverySettingAgain) {
  App first("job", "a test job");
  (void)first.setting("n", std::int64_t{8}, "points");
  (void)first.setting("shape", "sine", "a shape");
  (void)first.setting("keys", std::vector<std::string>{}, "a list");
  ASSERT_EQ(parse(first, {"--n", "40", "--shape", "gauss", "--keys", "a,b", "--keys", "c",
                          "--checkpoint-every", "5"}),
            -1);
  const std::string text = first.config_text();
  EXPECT_NE(text.find("n = 40"), std::string::npos) << text;
  EXPECT_NE(text.find("# command line, recorded"), std::string::npos) << text;
  EXPECT_NE(text.find("keys = a,b,c"), std::string::npos) << text;
  const fs::path file = write("printed.conf", text);
  App second("job", "a test job");
  (void)second.setting("n", std::int64_t{8}, "points");
  (void)second.setting("shape", "sine", "a shape");
  (void)second.setting("keys", std::vector<std::string>{}, "a list");
  ASSERT_EQ(parse(second, {"--config", file.string()}), -1);
  EXPECT_EQ(second.stored_config(), first.stored_config());
  EXPECT_EQ((*second.standard().checkpoint_every)(), 5);
}

TEST_F(Settings, BadConfigFilesAreRefusedNamingTheFileAndLine) {
  auto refused = [&](const std::string& path) {
    App app("job", "a test job");
    (void)app.setting("n", std::int64_t{8}, "points").at_least(1);
    return refusal(app, {"--config", path});
  };
  EXPECT_NE(refused((dir_ / "missing.conf").string()).find("missing.conf: no such file"),
            std::string::npos);
  EXPECT_NE(refused(dir_.string()).find("is not a regular file"), std::string::npos);
  EXPECT_NE(refused(write("bad.conf", "n = 4\njust words\n").string())
                .find("'just words' (" + (dir_ / "bad.conf").string() + " line 2) is not"),
            std::string::npos);
  EXPECT_NE(refused(write("binary.conf", std::string("\x01\x1b[2Jjunk\n")).string())
                .find("'??[2Jjunk' ("),
            std::string::npos);
  EXPECT_NE(refused(write("unknown.conf", "m = 4\n").string()).find("unknown setting 'm'"),
            std::string::npos);
  EXPECT_NE(refused(write("value.conf", "n = 0\n").string())
                .find("n = 0 (" + (dir_ / "value.conf").string() + " line 1): expected"),
            std::string::npos);
  EXPECT_NE(refused(write("huge.conf", std::string((1 << 20) + 10, '#')).string())
                .find("more than a settings file's 1 MiB"),
            std::string::npos);
  {
    App app("job", "a test job");
    EXPECT_NE(refusal(app, {"--config"}).find("--config was given no file"), std::string::npos);
  }
}

TEST_F(Settings, TheStoredConfigurationAndThePolicyComeFromTheDeclarations) {
  App app("job", "a test job");
  auto& dt = app.setting("dt", 0.0, "a time step").at_least(0.0).safe_to_change();
  (void)app.setting("courant", 0.9, "a fraction").safe_to_change().recorded_when([&] {
    return dt() == 0;
  });
  (void)app.setting("grid-size", std::int64_t{8}, "points");
  (void)app.setting("output", "", "a file").not_recorded();
  ASSERT_EQ(parse(app, {"--allow-config-change", "dt"}), -1);
  EXPECT_EQ(app.stored_config(),
            R"({"program":"job","dt":0.0,"courant":0.9,"grid_size":8,"steps":100})");
  const io::ConfigPolicy policy = app.config_policy();
  EXPECT_EQ(policy.free_keys, std::vector<std::string>{"steps"});
  EXPECT_EQ(policy.safe_keys, (std::vector<std::string>{"dt", "courant"}));
  EXPECT_EQ(policy.allowed, std::vector<std::string>{"dt"});
}

TEST_F(Settings, AnAllowedChangeOfARecordedKeyThatCannotChangeIsRefusedAtOnce) {
  App app("job", "a test job");
  (void)app.setting("grid-size", std::int64_t{8}, "points");
  EXPECT_NE(refusal(app, {"--allow-config-change", "grid_size"}).find("grid_size cannot change"),
            std::string::npos);
}

TEST_F(Settings, RecordedWhenFollowsTheOtherSettings) {
  App app("job", "a test job");
  auto& dt = app.setting("dt", 0.0, "a time step").safe_to_change();
  (void)app.setting("courant", 0.9, "a fraction").safe_to_change().recorded_when([&] {
    return dt() == 0;
  });
  ASSERT_EQ(parse(app, {"--dt", "0.001"}), -1);
  EXPECT_EQ(app.stored_config(), R"({"program":"job","dt":0.001,"steps":100})");
  EXPECT_EQ(app.config_policy().safe_keys, std::vector<std::string>{"dt"});
}

TEST_F(Settings, DeclarationMistakesAreTheProgramsAndRefusedAtOnce) {
  App app("job", "a test job");
  (void)app.setting("n", std::int64_t{8}, "points");
  EXPECT_THROW((void)app.setting("n", std::int64_t{9}, "again"), UsageError);
  EXPECT_THROW((void)app.setting("steps", std::int64_t{9}, "a standard one"), UsageError);
  EXPECT_THROW((void)app.setting("help", false, "the App's own"), UsageError);
  EXPECT_THROW((void)app.setting("bad name", 1.0, "a space"), UsageError);
  EXPECT_THROW((void)app.setting("", 1.0, "empty"), UsageError);
  EXPECT_THROW((void)app.setting("low", std::int64_t{0}, "default refused").at_least(1),
               UsageError);
  EXPECT_THROW((void)app.setting("pick", "c", "default refused").one_of({"a", "b"}), UsageError);
  EXPECT_THROW(App("bad program", "a name with a space"), UsageError);
  ASSERT_EQ(parse(app, {}), -1);
  EXPECT_THROW((void)app.setting("late", 1.0, "after parse"), UsageError);
  EXPECT_THROW(parse(app, {}), UsageError);
}

TEST_F(Settings, HelpListsTheJobsSettingsTheStandardOnesAndThePrecedence) {
  App app("job", "a test job", {.steps = 25});
  (void)app.setting("n", std::int64_t{8}, "points per side").at_least(1);
  app.section("Solver (--solver.*)");
  (void)app.setting("solver.tol", 1e-8, "relative tolerance").above(0.0).safe_to_change();
  const std::string help = app.help_text();
  for (const char* text : {"job: a test job",
                           "Job:",
                           "--n N",
                           "points per side [an integer >= 1; default 8;",
                           "Solver (--solver.*):",
                           "--solver.tol X",
                           "safe to change",
                           "Run (every tenax job has these):",
                           "--steps N",
                           "default 25",
                           "--checkpoint-every N",
                           "--inject VALUE",
                           "--async",
                           "--allow-config-change",
                           "--device",
                           "--comm-timeout X",
                           "--telemetry-seconds",
                           "--profile",
                           "--help, -h",
                           "--version",
                           "--print-config",
                           "--config FILE",
                           "TENAX_ARGS"}) {
    EXPECT_NE(help.find(text), std::string::npos) << "missing '" << text << "' in\n" << help;
  }
  // The job's settings come before the standard ones.
  EXPECT_LT(help.find("--n N"), help.find("--steps N"));
}

TEST_F(Settings, HelpAndVersionEndTheProgramBeforeAnyValueIsChecked) {
  App app("job", "a test job");
  (void)app.setting("n", std::int64_t{8}, "points").at_least(1);
  testing::internal::CaptureStdout();
  EXPECT_EQ(parse(app, {"--n", "0", "--help"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("usage: job"), std::string::npos);
  App other("job", "a test job");
  testing::internal::CaptureStdout();
  EXPECT_EQ(parse(other, {"--version"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("job (tenax "), std::string::npos);
}

TEST_F(Settings, MainEndsWithOneLineAndTheExitCodeOfTheFaultClass) {
  App app("job", "a test job");
  (void)app.setting("n", std::int64_t{8}, "points").at_least(1);
  const char* argv[] = {"job", "--n", "0"};
  testing::internal::CaptureStderr();
  EXPECT_EQ(app.main(3, argv, [](Job&) { return 0; }), 1);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "job: tenax usage error: --n 0: expected an integer >= 1 -- fix: give --n an integer "
            ">= 1\n");
  // What escapes the body: its fault class's exit code, the line without a source location.
  App second("job", "a test job");
  const char* none[] = {"job", "--device", "cpu"};
  testing::internal::CaptureStderr();
  EXPECT_EQ(
      second.main(3, none,
                  [](Job&) -> int { throw CommFaultError("a peer vanished", "restart the job"); }),
      kRestartExitCode);
  const std::string comm = testing::internal::GetCapturedStderr();
  EXPECT_EQ(comm, "job: tenax comm_fault error: a peer vanished -- fix: restart the job\n");
  App third("job", "a test job");
  testing::internal::CaptureStderr();
  EXPECT_EQ(third.main(3, none, [](Job&) -> int { throw std::bad_alloc(); }), 1);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("job: tenax out_of_memory error"),
            std::string::npos);
}

TEST_F(Settings, MessagesNamingAnApiOptionNameItsFlag) {
  App app("job", "a test job");
  (void)app.setting("detect", false, "anomaly mode").sets_option("TrainerOptions::detect_anomaly");
  const runtime::OptionFlags flags = app.option_flags();
  const auto has = [&](const std::string& option, const std::string& flag) {
    for (const runtime::OptionFlag& f : flags) {
      if (f.option == option && f.flag == flag) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("TrainerOptions::detect_anomaly", "--detect"));
  EXPECT_TRUE(has("RunnerOptions::keep_last", "--keep-last"));
  EXPECT_TRUE(has("RunnerOptions::telemetry_seconds", "--telemetry-seconds"));
  EXPECT_TRUE(has("CommOptions::timeout_seconds", "--comm-timeout"));
  // The program's last line names the flag beside the option an error names.
  const char* argv[] = {"job", "--device", "cpu"};
  testing::internal::CaptureStderr();
  EXPECT_EQ(app.main(3, argv,
                     [](Job&) -> int {
                       throw AnomalyError("NaN at step 3",
                                          "set TrainerOptions::detect_anomaly to name the op");
                     }),
            1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "job: tenax anomaly error: NaN at step 3 -- fix: set TrainerOptions::detect_anomaly "
            "(--detect) to name the op\n");
  // So does the Runner's own check of an option the app layer sets.
  App runs("job", "a test job", {.steps = 5});
  const std::string dir = (std::filesystem::temp_directory_path() / "tenax-flags-test").string();
  const char* bad[] = {"job", "--device", "cpu", "--run-dir", dir.c_str()};
  testing::internal::CaptureStderr();
  (void)runs.main(5, bad, [](Job& job) -> int {
    runtime::RunnerOptions options = job.runner_options();
    options.keep_last = 0;
    struct Nothing : runtime::Workload {
      void init() override {}
      std::int64_t work_units() const override { return 1; }
      void step(std::int64_t, std::int64_t) override {}
      void commit_step() override {}
      StateDict save_state() const override { return {}; }
      void load_state(const StateDict&) override {}
    } nothing;
    return job.run(nothing, options).exit_code;
  });
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("(--keep-last)"), std::string::npos) << said;
}

// The training component declares its own settings: flags, checks, the recipe, and what a
// resume may change.
TEST_F(Settings, TrainingSettingsAreTheTrainingsOwn) {
  App app("job", "a test job", {.steps = 100});
  const TrainingSettings training(app, {.lr = 0.5});
  ASSERT_EQ(parse(app, {"--optimizer", "sgd", "--lr", "0.25", "--optimizer.options", "momentum=0.9",
                        "--schedule", "cosine:warmup=10", "--precision", "f16", "--loss-scaler",
                        "init=1024", "--clip-grad-norm", "2", "--detect-anomaly"}),
            -1);
  const train::TrainingRecipe recipe = training.recipe(100);
  EXPECT_EQ(recipe.optimizer, "sgd");
  EXPECT_EQ(recipe.lr, 0.25);
  EXPECT_EQ(recipe.optimizer_options, "momentum=0.9");
  EXPECT_EQ(recipe.schedule, "cosine:warmup=10");
  EXPECT_EQ(recipe.total_steps, 100);
  EXPECT_EQ(recipe.precision, train::Precision::f16);
  EXPECT_EQ(recipe.loss_scaler.init_scale, 1024.0);
  EXPECT_EQ(recipe.trainer.clip_grad_norm, 2.0);
  EXPECT_TRUE(recipe.trainer.detect_anomaly);
  EXPECT_TRUE(training.precision().uses_loss_scaling());

  // What a resume may change: the advice's settings are safe, the optimizer and the schedule
  // must match, anomaly mode is not recorded; under a cosine schedule --steps is safe, not free.
  const io::ConfigPolicy policy = app.config_policy();
  const auto has = [](const std::vector<std::string>& keys, const std::string& key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  for (const char* key : {"lr", "precision", "loss_scaler", "clip_grad_norm", "steps"}) {
    EXPECT_TRUE(has(policy.safe_keys, key)) << key;
  }
  for (const char* key : {"optimizer", "optimizer_options", "schedule", "lr"}) {
    EXPECT_FALSE(has(policy.free_keys, key)) << key;
  }
  EXPECT_EQ(app.stored_config().find("detect_anomaly"), std::string::npos);
  // Each flag names the option it sets, for the library's messages.
  const runtime::OptionFlags flags = app.option_flags();
  const auto names = [&](const std::string& option, const std::string& flag) {
    return std::any_of(flags.begin(), flags.end(), [&](const runtime::OptionFlag& f) {
      return f.option == option && f.flag == flag;
    });
  };
  EXPECT_TRUE(names("TrainerOptions::detect_anomaly", "--detect-anomaly"));
  EXPECT_TRUE(names("the learning rate", "--lr"));
  EXPECT_TRUE(names("LossScalerOptions::on_min", "--loss-scaler"));
}

TEST_F(Settings, TrainingSettingsRefuseBadValuesNamingTheFlag) {
  const auto refused = [&](std::vector<std::string> args) {
    App app("job", "a test job", {.steps = 10});
    const TrainingSettings training(app);
    return refusal(app, std::move(args));
  };
  EXPECT_NE(refused({"--optimizer", "adagrad"}).find("--optimizer adagrad"), std::string::npos)
      << refused({"--optimizer", "adagrad"});
  EXPECT_NE(refused({"--lr", "0"}).find("--lr 0"), std::string::npos);
  EXPECT_NE(refused({"--lr", "nan"}).find("--lr nan"), std::string::npos);
  EXPECT_NE(refused({"--schedule", "sawtooth"}).find("sawtooth"), std::string::npos)
      << refused({"--schedule", "sawtooth"});
  EXPECT_NE(refused({"--loss-scaler", "init=3,bogus=1"}).find("bogus"), std::string::npos)
      << refused({"--loss-scaler", "init=3,bogus=1"});
  EXPECT_NE(refused({"--precision", "f8"}).find("--precision f8"), std::string::npos);
  EXPECT_NE(refused({"--clip-grad-norm", "-1"}).find("--clip-grad-norm -1"), std::string::npos);
  // A program keeps its own names.
  App named("job", "a test job", {.steps = 10});
  const TrainingSettings training(named, {}, {.optimizer_options = "optimizer-options"});
  EXPECT_EQ(parse(named, {"--optimizer-options", "beta2=0.99"}), -1);
  EXPECT_EQ(training.recipe(10).optimizer_options, "beta2=0.99");
}

// An empty value given for a text whose default "" means something (`--matrix ''`, an unset
// shell variable) is refused naming that meaning; left out, or "" in a settings file (what
// --print-config writes for it), it is the default.
TEST_F(Settings, AnEmptyValueIsNotARequestForTheDefault) {
  const auto declare = [](App& app) -> Setting<std::string>& {
    return app.setting("matrix", "", "a system's file").empty_means("the built-in problem");
  };
  App given("job", "a test job");
  (void)declare(given);
  const std::string said = refusal(given, {"--matrix", ""});
  EXPECT_NE(said.find("--matrix '': an empty value"), std::string::npos) << said;
  EXPECT_NE(said.find("leave it out for the built-in problem"), std::string::npos) << said;
  App in_environment("job", "a test job");
  (void)declare(in_environment);
  ::setenv("TENAX_ARGS", "--matrix=", 1);
  EXPECT_NE(refusal(in_environment, {}).find("--matrix '' (in TENAX_ARGS): an empty value"),
            std::string::npos)
      << refusal(in_environment, {});
  ::unsetenv("TENAX_ARGS");
  App left_out("job", "a test job");
  const Setting<std::string>& matrix = declare(left_out);
  EXPECT_EQ(parse(left_out, {}), -1);
  EXPECT_EQ(matrix(), "");
  App from_file("job", "a test job");
  (void)declare(from_file);
  const fs::path file = write("run.conf", "matrix = \n");
  EXPECT_EQ(parse(from_file, {"--config", file.string()}), -1);
  // Other texts may still be given empty.
  App other("job", "a test job");
  const Setting<std::string>& note = other.setting("note", "x", "a note");
  EXPECT_EQ(parse(other, {"--note", ""}), -1);
  EXPECT_EQ(note(), "");
}

}  // namespace
}  // namespace tenax::app
