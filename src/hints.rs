//! "Maybe you meant" hints for a misspelled name, in ClickHouse's rule and form, and the names
//! other engines use for icetrim's parameters and procedures.
//!
//! The rule (ClickHouse's name prompter): a candidate is considered when the lengths differ by at
//! most a third of the typed name (rounded up) and the typed name is at least three times as
//! long as that difference; it is kept when its Levenshtein distance to the typed name, with
//! letters compared case-insensitively, is at most that third. The closest `max` candidates are
//! kept, nearest first; on equal distance the earlier candidate wins. The hint is appended to the
//! unchanged message as `. Maybe you meant: ['a','b']`.
//!
//! A name another engine uses for the same idea (Spark's `older_than`, Trino's
//! `retention_threshold`) is never accepted as an alias (the statement still fails); the hint
//! names icetrim's spelling and says whose name it was. Pure: data in, text out.

/// How many hints ClickHouse gives for a setting or a function (its factories keep two).
pub const MAX_HINTS: usize = 2;

/// Levenshtein distance of `a` and `b`, ASCII letters compared case-insensitively.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (j, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = j + 1;
        for (i, cb) in b.iter().enumerate() {
            let above = row[i + 1];
            let substitute = diagonal + usize::from(ca != cb);
            row[i + 1] = substitute.min(row[i].min(above) + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The candidates close enough to `name` (the module comment's rule), nearest first, at most `max`.
pub fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<&'a str> {
    let length = name.chars().count();
    let mistake_factor = length.div_ceil(3);
    let mut kept: Vec<(usize, usize, &str)> = Vec::new();
    for (index, candidate) in candidates.into_iter().enumerate() {
        let other = candidate.chars().count();
        let gap = length.abs_diff(other);
        if gap > 0 && length / gap < 3 {
            continue;
        }
        if gap > mistake_factor {
            continue;
        }
        let distance = edit_distance(candidate, name);
        if distance <= mistake_factor {
            kept.push((distance, index, candidate));
        }
    }
    kept.sort_unstable();
    kept.into_iter().take(max).map(|(_, _, c)| c).collect()
}

/// `. Maybe you meant: ['a','b']`, or nothing without hints (ClickHouse's form).
pub fn maybe_you_meant<S: AsRef<str>>(hints: &[S]) -> String {
    if hints.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = hints
        .iter()
        .map(|h| format!("'{}'", h.as_ref().replace('\'', "\\'")))
        .collect();
    format!(". Maybe you meant: [{}]", quoted.join(","))
}

/// A parameter name other engines give a procedure, with icetrim's name for the same idea.
struct ForeignParam {
    procedure: &'static str,
    name: &'static str,
    engine: &'static str,
    icetrim: &'static str,
}

const FOREIGN_PARAMS: &[ForeignParam] = &[
    ForeignParam {
        procedure: "expire_snapshots",
        name: "older_than",
        engine: "Spark",
        icetrim: "expire_before",
    },
    ForeignParam {
        procedure: "expire_snapshots",
        name: "retention_threshold",
        engine: "Trino",
        icetrim: "retention_period",
    },
    ForeignParam {
        procedure: "expire_snapshots",
        name: "max_concurrent_deletes",
        engine: "Spark",
        icetrim: "the setting iceberg_delete_concurrency",
    },
    ForeignParam {
        procedure: "remove_orphan_files",
        name: "retention_threshold",
        engine: "Trino",
        icetrim: "older_than (a timestamp: now minus the threshold)",
    },
    ForeignParam {
        procedure: "expire_snapshots",
        name: "retain_last_count",
        engine: "Spark",
        icetrim: "retain_last",
    },
    ForeignParam {
        procedure: "rewrite_data_files",
        name: "file_size_threshold",
        engine: "Trino",
        icetrim: "min_file_size_bytes",
    },
];

/// The hint for an unknown parameter `name` of `procedure` whose parameters are `params`: the
/// near spellings, then, for another engine's name, icetrim's equivalent.
pub fn unknown_parameter(procedure: &str, name: &str, params: &[&str]) -> String {
    let foreign = FOREIGN_PARAMS
        .iter()
        .find(|f| f.procedure == procedure && f.name.eq_ignore_ascii_case(name));
    match foreign {
        Some(f) => {
            let spelled = f.icetrim.split([' ', ':']).next().unwrap_or(f.icetrim);
            let hint = if params.contains(&spelled) {
                maybe_you_meant(&[spelled])
            } else {
                String::new()
            };
            format!(
                "{hint}. {} is {}'s name for {}",
                f.name, f.engine, f.icetrim
            )
        }
        None => maybe_you_meant(&closest(name, params.iter().copied(), MAX_HINTS)),
    }
}

/// Procedures other engines call by another name, with icetrim's.
const FOREIGN_PROCEDURES: &[(&str, &str, &str)] = &[
    (
        "optimize",
        "Trino",
        "rewrite_data_files (or OPTIMIZE TABLE <table>)",
    ),
    ("optimize_manifests", "Trino", "rewrite_manifests"),
    ("remove_orphans", "Spark", "remove_orphan_files"),
    ("delete_orphan_files", "Spark", "remove_orphan_files"),
];

/// The hint for an unknown procedure `name` among `procedures`.
pub fn unknown_procedure(name: &str, procedures: &[&str]) -> String {
    let lower = name.to_ascii_lowercase();
    if let Some((foreign, engine, icetrim)) =
        FOREIGN_PROCEDURES.iter().find(|(n, _, _)| *n == lower)
    {
        let spelled = icetrim.split(' ').next().unwrap_or(icetrim);
        let hint = if procedures.contains(&spelled) {
            maybe_you_meant(&[spelled])
        } else {
            String::new()
        };
        return format!("{hint}. {foreign} is {engine}'s name for {icetrim}");
    }
    maybe_you_meant(&closest(name, procedures.iter().copied(), MAX_HINTS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn distance_is_levenshtein_ignoring_case() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("ABC", "abc"), 0);
        assert_eq!(edit_distance("expire_snapshot", "expire_snapshots"), 1);
    }

    #[test]
    fn clickhouses_thresholds() {
        // 15 letters: a third is 5; one letter missing is a hint.
        assert_eq!(
            closest(
                "expire_snapshot",
                ["expire_snapshots", "rewrite_manifests"],
                2
            ),
            ["expire_snapshots"]
        );
        // A name much shorter than the candidate is not a typo of it.
        assert!(closest("exp", ["expire_snapshots"], 2).is_empty());
        // Three letters: a third is 1; two edits are too many.
        assert!(closest("abc", ["axy"], 2).is_empty());
        assert_eq!(closest("abc", ["abd"], 2), ["abd"]);
        // The length gap rule: 5 letters, gap 2, 5 / 2 < 3.
        assert!(closest("abcde", ["abcdefg"], 2).is_empty());
    }

    #[test]
    fn nearest_first_and_bounded() {
        let candidates = ["max_threads", "max_thread", "max_threadz", "min_threads"];
        assert_eq!(
            closest("max_thread", candidates, 2),
            ["max_thread", "max_threads"]
        );
        assert_eq!(closest("max_thread", candidates, 1), ["max_thread"]);
    }

    #[test]
    fn clickhouses_text() {
        assert_eq!(maybe_you_meant::<&str>(&[]), "");
        assert_eq!(maybe_you_meant(&["a"]), ". Maybe you meant: ['a']");
        assert_eq!(maybe_you_meant(&["a", "b"]), ". Maybe you meant: ['a','b']");
    }

    #[test]
    fn another_engines_parameter_names_icetrims() {
        let params = ["expire_before", "retention_period", "retain_last"];
        assert_eq!(
            unknown_parameter("expire_snapshots", "older_than", &params),
            ". Maybe you meant: ['expire_before']. older_than is Spark's name for expire_before"
        );
        assert_eq!(
            unknown_parameter("expire_snapshots", "retention_threshold", &params),
            ". Maybe you meant: ['retention_period']. retention_threshold is Trino's name for \
             retention_period"
        );
        assert_eq!(
            unknown_parameter("expire_snapshots", "retain_lst", &params),
            ". Maybe you meant: ['retain_last']"
        );
        assert_eq!(unknown_parameter("expire_snapshots", "foo", &params), "");
    }

    #[test]
    fn another_engines_procedure_names_icetrims() {
        let procedures = ["expire_snapshots", "rewrite_data_files"];
        assert_eq!(
            unknown_procedure("optimize", &procedures),
            ". Maybe you meant: ['rewrite_data_files']. optimize is Trino's name for \
             rewrite_data_files (or OPTIMIZE TABLE <table>)"
        );
        assert_eq!(
            unknown_procedure("expire_snapshot", &procedures),
            ". Maybe you meant: ['expire_snapshots']"
        );
    }

    proptest! {
        #[test]
        fn a_hint_is_never_farther_than_a_third(name in "[a-z_]{1,20}", other in "[a-z_]{1,20}") {
            for hint in closest(&name, [other.as_str()], 2) {
                prop_assert!(edit_distance(&name, hint) <= name.len().div_ceil(3));
            }
            prop_assert_eq!(closest(&name, [name.as_str()], 2), vec![name.as_str()]);
        }

        #[test]
        fn distance_is_symmetric(a in "[a-zA-Z]{0,12}", b in "[a-zA-Z]{0,12}") {
            prop_assert_eq!(edit_distance(&a, &b), edit_distance(&b, &a));
        }
    }

    /// The hints chdb (ClickHouse 26.9) gives for format names, over icetrim's format names.
    #[test]
    fn format_name_hints_as_clickhouse_gives_them() {
        let names = [
            "PrettyCompact",
            "Pretty",
            "TSVWithNames",
            "CSVWithNames",
            "JSON",
            "JSONEachRow",
            "Markdown",
            "Vertical",
        ];
        assert_eq!(closest("PrettyCompat", names, MAX_HINTS), ["PrettyCompact"]);
        assert_eq!(closest("prettycompat", names, MAX_HINTS), ["PrettyCompact"]);
        assert_eq!(closest("Prety", names, MAX_HINTS), ["Pretty"]);
        assert_eq!(closest("JSO", names, MAX_HINTS), ["JSON"]);
        assert_eq!(
            closest("CSVWithName", names, MAX_HINTS),
            ["CSVWithNames", "TSVWithNames"]
        );
        assert_eq!(
            closest("TSVWithName", names, MAX_HINTS),
            ["TSVWithNames", "CSVWithNames"]
        );
        assert!(
            closest("Vert", names, MAX_HINTS).is_empty(),
            "too short for its difference"
        );
        assert!(closest("Foo", names, MAX_HINTS).is_empty());
        assert!(closest("", names, MAX_HINTS).is_empty());
    }
}
