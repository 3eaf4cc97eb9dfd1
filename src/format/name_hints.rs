//! "Maybe you meant" hints for a mistyped name, chosen the way ClickHouse chooses them (its
//! name prompter, after Clang's typo corrector): a candidate qualifies when its length differs
//! from the typed name's by at most a third of the typed length (rounded up), the typed length is
//! at least three times that difference, and its case-insensitive Levenshtein distance is at most
//! that third; the two nearest qualify, nearest first (ties in the candidates' order).

/// At most two candidates close to `typed`, nearest first: `Markdwn` gets `Markdown`, `Vert` gets
/// nothing (four letters cannot be three thirds of the way to `Vertical`).
pub fn hints<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let length = typed.chars().count();
    let mistake_factor = length.div_ceil(3);
    let mut close: Vec<(usize, usize, &str)> = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(index, candidate)| {
            let difference = length.abs_diff(candidate.chars().count());
            if difference > 0 && length / difference < 3 {
                return None;
            }
            if difference > mistake_factor {
                return None;
            }
            let distance = distance_ignoring_case(typed, candidate);
            (distance <= mistake_factor).then_some((distance, index, candidate))
        })
        .collect();
    close.sort_unstable();
    close.into_iter().take(2).map(|(_, _, name)| name).collect()
}

/// `Maybe you meant: ['a','b']` as ClickHouse appends it, or nothing without hints.
pub fn maybe_you_meant(hints: &[&str]) -> String {
    if hints.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = hints.iter().map(|h| format!("'{h}'")).collect();
    format!(". Maybe you meant: [{}]", quoted.join(","))
}

/// Levenshtein distance over characters, ASCII letters compared without case.
fn distance_ignoring_case(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut current = Vec::with_capacity(b.len() + 1);
        current.push(i + 1);
        for (j, y) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(x != y);
            current.push(substitute.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hints chdb (ClickHouse 26.9) gives for these format names, over our names.
    #[test]
    fn hints_as_clickhouse_gives_them() {
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
        assert_eq!(hints("PrettyCompat", names), ["PrettyCompact"]);
        assert_eq!(hints("prettycompat", names), ["PrettyCompact"]);
        assert_eq!(hints("Prety", names), ["Pretty"]);
        assert_eq!(hints("JSO", names), ["JSON"]);
        assert_eq!(
            hints("CSVWithName", names),
            ["CSVWithNames", "TSVWithNames"]
        );
        assert_eq!(
            hints("TSVWithName", names),
            ["TSVWithNames", "CSVWithNames"]
        );
        assert!(
            hints("Vert", names).is_empty(),
            "too short for its difference"
        );
        assert!(hints("Foo", names).is_empty());
        assert!(hints("", names).is_empty());
    }

    #[test]
    fn message_form() {
        assert_eq!(maybe_you_meant(&[]), "");
        assert_eq!(
            maybe_you_meant(&["CSVWithNames", "TSVWithNames"]),
            ". Maybe you meant: ['CSVWithNames','TSVWithNames']"
        );
    }
}
