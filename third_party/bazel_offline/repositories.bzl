"""The rule repositories Bazel 4 would download, as local stand-ins.

Offline (Debian's bazel-bootstrap 4.2.3 with --experimental_repository_disable_download),
only the main WORKSPACE is evaluated, so a workspace that depends on ferry
declares the stand-ins itself. It loads this file from @ferry and passes the
path it gave @ferry's local_repository:

    local_repository(name = "ferry", path = "/path/to/ferry")
    load("@ferry//third_party/bazel_offline:repositories.bzl", "ferry_offline_repositories")
    ferry_offline_repositories(ferry_path = "/path/to/ferry")

ferry's own WORKSPACE uses it with ferry_path = ".". With network access and
a newer Bazel none of this is needed.
"""

# Each is a directory of third_party/bazel_offline/ with a WORKSPACE and the
# few .bzl files ferry's BUILD files and Bazel's built-in rules load.
FERRY_OFFLINE_REPOSITORIES = ["rules_cc", "rules_java", "rules_proto", "remote_coverage_tools"]

def ferry_offline_repositories(ferry_path):
    """Declares every stand-in repository that the workspace does not declare.

    Args:
      ferry_path: the path of the ferry checkout, as given to its
        local_repository (relative paths are relative to the workspace root).
    """
    existing = native.existing_rules()
    for name in FERRY_OFFLINE_REPOSITORIES:
        if name not in existing:
            native.local_repository(
                name = name,
                path = ferry_path + "/third_party/bazel_offline/" + name,
            )
