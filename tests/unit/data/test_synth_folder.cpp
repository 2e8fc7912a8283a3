// The synthetic folder-name convention: the name carries shape, scale and width, and a
// missing folder of that name maps back to the command that makes it.
#include <gtest/gtest.h>

#include "depbloom/data/synth.h"

namespace depbloom::data {
namespace {

TEST(SynthFolder, NameCarriesScaleAndWidth) {
  SynthSpec spec;
  spec.shape = SynthShape::reddit;
  spec.scale = 0.1;
  spec.edge_features = synth_edge_features(spec.shape);
  EXPECT_EQ(synth_folder_name(spec), "reddit-s0.1-f172");
  spec.shape = SynthShape::wikitalk;
  spec.scale = 2;
  spec.edge_features = synth_edge_features(spec.shape);
  EXPECT_EQ(synth_folder_name(spec), "wikitalk-s2-f0");
  EXPECT_EQ(synth_edge_features(SynthShape::wiki), 172);
}

TEST(SynthFolder, CommandForAMissingFolder) {
  EXPECT_EQ(synth_command_for("data/synth/wiki-s0.1-f172"),
            "depbloom-data synth --like wiki --scale 0.1 --seed 0 --edge-features 172 -o "
            "data/synth/wiki-s0.1-f172");
  // Not the convention: no command (an old featureless folder, other files).
  for (const char* path :
       {"data/synth/reddit", "data/x.csv", "data/synth/moon-s1-f2", "data/synth/wiki-s-f1",
        "data/synth/wiki-s0-f1", "data/synth/wiki-s1-fx", "data/synth/wiki-s1-f"})
    EXPECT_EQ(synth_command_for(path), "") << path;
}

}  // namespace
}  // namespace depbloom::data
