package io.github.ferryarrow.ferry;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One finding of ferry's validator.
 *
 * @param rule a short stable identifier ("format", "n_buffers", "device", "offsets", ...)
 * @param where the path of the node ("root.children[1].dictionary")
 * @param what a sentence saying what is wrong
 */
public record Finding(String rule, String where, String what) {
  /** Splits the native layer's report ("rule\037where\037what", separated by "\036"). */
  static List<Finding> parse(String report) {
    if (report == null || report.isEmpty()) return List.of();
    List<Finding> out = new ArrayList<>();
    for (String entry : report.split("\u001e", -1)) {
      String[] parts = entry.split("\u001f", 3);
      out.add(new Finding(parts[0], parts.length > 1 ? parts[1] : "",
          parts.length > 2 ? parts[2] : ""));
    }
    return Collections.unmodifiableList(out);
  }

  @Override
  public String toString() {
    return rule + " at " + where + ": " + what;
  }
}
