//! Finding the current metadata file (ClickHouse's resolver, never an older file) on the local and
//! in-memory stores.

use crate::support::metadata as metadata_support;

use icetrim::ErrorKind;
use icetrim::internals::iceberg::locate::{MetadataSettings, NamingScheme, locate};
use icetrim::internals::iceberg::metadata::MetadataCompression;
use metadata_support::*;

fn settings() -> MetadataSettings {
    MetadataSettings::default()
}

#[tokio::test]
async fn highest_version_wins_not_name_order() {
    for (io, loc, _dir) in stores() {
        for v in [1, 2, 9, 10] {
            put_doc(
                &io,
                &loc,
                &format!("v{v}.metadata.json"),
                &doc(&loc, UUID_A, v, &[v]),
            )
            .await;
        }
        // Noise: a temporary commit file, another kind of file, a nested folder.
        put_doc(
            &io,
            &loc,
            &format!("{UUID_B}.metadata.json"),
            &doc(&loc, UUID_A, 99, &[99]),
        )
        .await;
        put(&io, &format!("{loc}/metadata/snap-1.avro"), b"x".to_vec()).await;
        put_doc(
            &io,
            &loc,
            "old/v50.metadata.json",
            &doc(&loc, UUID_A, 50, &[50]),
        )
        .await;
        let found = locate(&io, &loc, &settings()).await.expect("located");
        assert_eq!(found.version, Some(10));
        assert_eq!(found.path, format!("{loc}/metadata/v10.metadata.json"));
        assert_eq!(found.naming, NamingScheme::Versioned);
        assert_eq!(found.metadata.current_snapshot_id(), Some(10));
        assert!(!found.ambiguous_naming);
        found.check_writable().expect("writable");
    }
}

#[tokio::test]
async fn pyiceberg_names_and_gzip() {
    for (io, loc, _dir) in stores() {
        put_doc(
            &io,
            &loc,
            &format!("00001-{UUID_A}.metadata.json"),
            &doc(&loc, UUID_A, 1, &[1]),
        )
        .await;
        let newest = doc(&loc, UUID_A, 2, &[1, 2]).to_string();
        put(
            &io,
            &format!("{loc}/metadata/00002-{UUID_B}.gz.metadata.json"),
            gzip(newest.as_bytes()),
        )
        .await;
        let found = locate(&io, &loc, &settings()).await.expect("located");
        assert_eq!(found.version, Some(2));
        assert_eq!(found.naming, NamingScheme::Sequenced { width: 5 });
        assert_eq!(found.compression, MetadataCompression::GzipInfix);
        assert_eq!(found.metadata.snapshots().len(), 2);

        put(
            &io,
            &format!("{loc}/metadata/v3.metadata.json.gz"),
            gzip(doc(&loc, UUID_A, 3, &[3]).to_string().as_bytes()),
        )
        .await;
        let found = locate(&io, &loc, &settings()).await.expect("located");
        assert_eq!(
            (found.version, found.compression),
            (Some(3), MetadataCompression::GzipSuffix)
        );
        assert!(found.ambiguous_naming, "v3 next to 00002-uuid");
        let err = found
            .check_writable()
            .expect_err("mixed names refuse writes");
        assert!(err.message().contains("ambiguous"), "{err}");
    }
}

#[tokio::test]
async fn missing_metadata_is_file_doesnt_exist() {
    for (io, loc, _dir) in stores() {
        let err = locate(&io, &loc, &settings())
            .await
            .expect_err("nothing there");
        assert_eq!(err.kind(), ErrorKind::FileDoesntExist);
        assert!(err.message().contains(&loc), "{err}");
        put(
            &io,
            &format!("{loc}/metadata/version-hint.text"),
            b"1".to_vec(),
        )
        .await;
        let err = locate(&io, &loc, &settings())
            .await
            .expect_err("a hint alone is no metadata");
        assert_eq!(err.kind(), ErrorKind::FileDoesntExist);
    }
}

#[tokio::test]
async fn table_uuid_filters_candidates() {
    for (io, loc, _dir) in stores() {
        put_doc(&io, &loc, "v1.metadata.json", &doc(&loc, UUID_A, 1, &[1])).await;
        put_doc(&io, &loc, "v2.metadata.json", &doc(&loc, UUID_B, 2, &[2])).await;
        let mut s = settings();
        s.table_uuid = Some(UUID_A.to_uppercase());
        let found = locate(&io, &loc, &s).await.expect("located");
        assert_eq!(found.version, Some(1));
        s.table_uuid = Some("cccccccc-0000-4000-8000-000000000003".into());
        let err = locate(&io, &loc, &s).await.expect_err("no such table");
        assert_eq!(err.kind(), ErrorKind::FileDoesntExist);
        assert!(err.message().contains("cccccccc"), "{err}");
    }
}

#[tokio::test]
async fn last_updated_ms_selection() {
    for (io, loc, _dir) in stores() {
        put_doc(&io, &loc, "v1.metadata.json", &doc(&loc, UUID_A, 500, &[1])).await;
        put_doc(&io, &loc, "v2.metadata.json", &doc(&loc, UUID_A, 100, &[2])).await;
        let mut s = settings();
        assert_eq!(locate(&io, &loc, &s).await.expect("ok").version, Some(2));
        s.by_last_updated_ms = true;
        assert_eq!(locate(&io, &loc, &s).await.expect("ok").version, Some(1));
    }
}

#[tokio::test]
async fn explicit_path_wins() {
    for (io, loc, _dir) in stores() {
        put_doc(&io, &loc, "v1.metadata.json", &doc(&loc, UUID_A, 1, &[1])).await;
        put_doc(&io, &loc, "v2.metadata.json", &doc(&loc, UUID_A, 2, &[2])).await;
        let mut s = settings();
        s.metadata_file_path = Some("metadata/v1.metadata.json".into());
        let found = locate(&io, &loc, &s).await.expect("located");
        assert_eq!(found.version, Some(1));
        s.metadata_file_path = Some("../elsewhere/v1.metadata.json".into());
        let err = locate(&io, &loc, &s).await.expect_err("outside");
        assert_eq!(err.kind(), ErrorKind::BadArguments);
    }
}

#[tokio::test]
async fn stale_version_hint_never_pins_an_older_file() {
    for (io, loc, _dir) in stores() {
        for v in 1..=3 {
            put_doc(
                &io,
                &loc,
                &format!("v{v}.metadata.json"),
                &doc(&loc, UUID_A, v, &[v]),
            )
            .await;
        }
        put(
            &io,
            &format!("{loc}/metadata/version-hint.text"),
            b"1\n".to_vec(),
        )
        .await;
        let mut s = settings();
        s.use_version_hint = true;
        let found = locate(&io, &loc, &s).await.expect("located");
        assert_eq!(found.version, Some(3));
        assert_eq!(
            found.version_hint,
            Some(format!("{loc}/metadata/version-hint.text"))
        );
    }
}

#[tokio::test]
async fn version_hint_settles_mixed_names() {
    for (io, loc, _dir) in stores() {
        let seq = format!("00003-{UUID_B}.metadata.json");
        put_doc(&io, &loc, "v3.metadata.json", &doc(&loc, UUID_A, 3, &[3])).await;
        put_doc(&io, &loc, &seq, &doc(&loc, UUID_A, 4, &[4])).await;
        put(
            &io,
            &format!("{loc}/metadata/version-hint.text"),
            seq.clone().into_bytes(),
        )
        .await;
        let mut s = settings();
        assert!(locate(&io, &loc, &s).await.expect("ok").ambiguous_naming);
        s.use_version_hint = true;
        let found = locate(&io, &loc, &s).await.expect("ok");
        assert_eq!(found.path, format!("{loc}/metadata/{seq}"));
        assert!(!found.ambiguous_naming);
        found.check_writable().expect("hint names the current file");
    }
}

#[tokio::test]
async fn garbage_outside_and_older_version_hints_warn() {
    for (io, loc, _dir) in stores() {
        for v in 1..=3 {
            put_doc(
                &io,
                &loc,
                &format!("v{v}.metadata.json"),
                &doc(&loc, UUID_A, v, &[v]),
            )
            .await;
        }
        let hint = format!("{loc}/metadata/version-hint.text");
        for use_hint in [false, true] {
            let mut s = settings();
            s.use_version_hint = use_hint;
            for (text, why) in [
                ("not a version!\n", "garbage"),
                ("/elsewhere/metadata/v3.metadata.json", "outside"),
                ("1\n", "older"),
                ("7\n", "missing"),
            ] {
                put(&io, &hint, text.as_bytes().to_vec()).await;
                let found = locate(&io, &loc, &s).await.expect("located");
                assert_eq!(found.version, Some(3), "{text}");
                assert!(
                    found
                        .warnings
                        .iter()
                        .any(|w| w.contains("version-hint.text")),
                    "{why} hint {text:?} gives no warning: {:?}",
                    found.warnings
                );
            }
            put(&io, &hint, b"3\n".to_vec()).await;
            let found = locate(&io, &loc, &s).await.expect("located");
            assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        }
    }
}

#[tokio::test]
async fn a_dangling_higher_version_hint_never_steers_a_commit() {
    use icetrim::internals::iceberg::commit::CommitOptions;
    for (io, loc, _dir) in stores() {
        for v in 1..=3 {
            put_doc(
                &io,
                &loc,
                &format!("v{v}.metadata.json"),
                &doc(&loc, UUID_A, v, &[v]),
            )
            .await;
        }
        let hint = format!("{loc}/metadata/version-hint.text");
        // A hint naming a missing higher version is no reason to leave the hint behind.
        put(&io, &hint, b"7\n".to_vec()).await;
        let committed = crate::support::commit::edit_path_table(
            &io,
            &loc,
            &settings(),
            2,
            &CommitOptions::default(),
            |md| Ok(Some(md.clone())),
        )
        .await
        .expect("commit")
        .expect("written");
        assert_eq!(committed.version, 4);
        let text = io.read(&hint).await.expect("hint");
        assert_eq!(String::from_utf8_lossy(&text).trim(), "4");
    }
}

#[tokio::test]
async fn a_commit_on_a_pinned_older_file_is_refused_in_any_naming() {
    use icetrim::internals::iceberg::commit::CommitOptions;
    for (io, loc, _dir) in stores() {
        let older = format!("00001-{UUID_A}.metadata.json");
        let newest = format!("00002-{UUID_B}.metadata.json");
        put_doc(&io, &loc, &older, &doc(&loc, UUID_A, 1, &[1])).await;
        put_doc(&io, &loc, &newest, &doc(&loc, UUID_A, 2, &[1, 2])).await;
        let pinned = MetadataSettings {
            metadata_file_path: Some(format!("metadata/{older}")),
            ..settings()
        };
        let e = crate::support::commit::edit_path_table(
            &io,
            &loc,
            &pinned,
            2,
            &CommitOptions::default(),
            |md| Ok(Some(md.clone())),
        )
        .await
        .expect_err("a commit on an older pinned file forks the table");
        assert_eq!(e.kind(), ErrorKind::BadArguments, "{e}");
        assert!(
            e.message().contains(&older) && e.message().contains(&newest),
            "{e}"
        );
        let names = io.list_names(&format!("{loc}/metadata")).await.unwrap();
        assert_eq!(names.len(), 2, "nothing written: {names:?}");
    }
}
