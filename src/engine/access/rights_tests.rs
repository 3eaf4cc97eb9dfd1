//! The rights of one user: hierarchy, wildcards, partial revokes, the grant option, and the
//! `SHOW GRANTS` lines.

use proptest::prelude::*;

use super::*;
use crate::engine::access::Privilege as P;
use crate::engine::access::privilege::all_flags;

fn t(db: &str, table: &str) -> GrantObject {
    GrantObject::table(db, table)
}

fn db(name: &str) -> GrantObject {
    GrantObject::Database(name.to_string())
}

fn allowed(r: &UserRights, p: P, object: &GrantObject) -> bool {
    let flags = p.flags() & grantable_at(object.level());
    r.access.holds(flags, object)
}

#[test]
fn a_group_covers_its_members_and_not_its_siblings() {
    let mut r = UserRights::default();
    r.grant(P::AlterTable.flags(), &t("db", "t"), false);
    assert!(allowed(&r, P::AlterExecute, &t("db", "t")));
    assert!(allowed(&r, P::AlterSettings, &t("db", "t")));
    assert!(!allowed(&r, P::Optimize, &t("db", "t")));
    assert!(!allowed(&r, P::AlterExecute, &t("db", "u")));
    // icetrim models no other ALTER: the group is what it holds.
    assert!(allowed(&r, P::Alter, &t("db", "t")));
    assert_eq!(r.show("u"), ["GRANT ALTER TABLE ON db.t TO u"]);
}

#[test]
fn wildcards_reach_every_table_below() {
    let mut r = UserRights::default();
    r.grant(P::Optimize.flags(), &db("db"), false);
    assert!(allowed(&r, P::Optimize, &t("db", "t")));
    assert!(allowed(&r, P::Optimize, &t("db", "other")));
    assert!(!allowed(&r, P::Optimize, &t("db2", "t")));
    r.grant(P::Select.flags(), &GrantObject::Global, false);
    assert!(allowed(&r, P::Select, &t("any", "where")));
    assert_eq!(
        r.show("u"),
        ["GRANT SELECT ON *.* TO u", "GRANT OPTIMIZE ON db.* TO u"]
    );
}

#[test]
fn revoking_a_parent_takes_the_child_grant_away() {
    let mut r = UserRights::default();
    r.grant(P::AlterExecute.flags(), &t("db", "t"), false);
    r.revoke(P::AlterTable.flags(), &t("db", "t"), false);
    assert!(!allowed(&r, P::AlterExecute, &t("db", "t")));
    assert_eq!(r, UserRights::default());
    assert!(r.show("u").is_empty());
    // The same from a wildcard above.
    r.grant(P::AlterExecute.flags(), &t("db", "t"), false);
    r.revoke(P::All.flags(), &GrantObject::Global, false);
    assert_eq!(r, UserRights::default());
}

#[test]
fn revoking_a_child_of_a_wider_grant_is_a_partial_revoke() {
    let mut r = UserRights::default();
    r.grant(P::AlterTable.flags(), &db("db"), false);
    r.revoke(P::AlterExecute.flags(), &t("db", "secret"), false);
    assert!(allowed(&r, P::AlterExecute, &t("db", "t")));
    assert!(!allowed(&r, P::AlterExecute, &t("db", "secret")));
    assert!(allowed(&r, P::AlterSettings, &t("db", "secret")));
    // `db.*` is no longer held whole.
    assert!(!r.access.holds(P::AlterExecute.flags(), &db("db")));
    assert_eq!(
        r.show("u"),
        [
            "GRANT ALTER TABLE ON db.* TO u",
            "REVOKE ALTER EXECUTE ON db.secret FROM u"
        ]
    );
    // On the same object: what is left.
    let mut r = UserRights::default();
    r.grant(P::AlterTable.flags(), &t("db", "t"), false);
    r.revoke(P::AlterExecute.flags(), &t("db", "t"), false);
    assert_eq!(r.show("u"), ["GRANT ALTER SETTINGS ON db.t TO u"]);
}

#[test]
fn the_grant_option_is_kept_apart_and_printed_as_clickhouse_does() {
    let mut r = UserRights::default();
    r.grant(P::AlterExecute.flags(), &t("db", "t"), true);
    r.grant(P::Select.flags(), &t("db", "t"), false);
    assert!(r.grant_option.holds(P::AlterExecute.flags(), &t("db", "t")));
    assert!(!r.grant_option.holds(P::Select.flags(), &t("db", "t")));
    assert_eq!(
        r.show("u"),
        [
            "GRANT SELECT ON db.t TO u",
            "GRANT ALTER EXECUTE ON db.t TO u WITH GRANT OPTION"
        ]
    );
    r.revoke(P::AlterExecute.flags(), &t("db", "t"), true);
    assert!(allowed(&r, P::AlterExecute, &t("db", "t")));
    assert!(!r.grant_option.holds(P::AlterExecute.flags(), &t("db", "t")));
    assert_eq!(r.show("u"), ["GRANT SELECT, ALTER EXECUTE ON db.t TO u"]);
}

#[test]
fn all_on_a_table_is_what_a_table_can_hold() {
    let mut r = UserRights::default();
    r.grant(
        P::All.flags() & grantable_at(Level::Table),
        &t("db", "t"),
        false,
    );
    assert!(allowed(&r, P::Optimize, &t("db", "t")));
    assert!(!allowed(&r, P::CreateUser, &GrantObject::Global));
    assert_eq!(r.show("u"), ["GRANT ALL ON db.t TO u"]);
    let everything = UserRights {
        access: Rights::everywhere(all_flags()),
        grant_option: Rights::everywhere(all_flags()),
    };
    assert_eq!(
        everything.show("default"),
        ["GRANT ALL ON *.* TO default WITH GRANT OPTION"]
    );
}

#[test]
fn odd_user_names_are_quoted() {
    assert_eq!(quoted_user("ops"), "ops");
    assert_eq!(quoted_user("a-b"), "`a-b`");
    assert_eq!(quoted_user("a`b"), "`a``b`");
}

#[test]
fn any_privilege_makes_a_table_and_its_database_visible() {
    let mut r = UserRights::default();
    let mask = grantable_at(Level::Table);
    assert!(!r.access.any(mask, &t("db", "t")));
    r.grant(P::Select.flags(), &t("db", "t"), false);
    assert!(r.access.any(mask, &t("db", "t")));
    assert!(r.access.any(mask, &db("db")));
    assert!(!r.access.any(mask, &t("db", "u")));
    assert!(!r.access.any(mask, &db("other")));
}

fn objects() -> impl Strategy<Value = GrantObject> {
    prop_oneof![
        Just(GrantObject::Global),
        prop::sample::select(vec!["a", "b"]).prop_map(db),
        (
            prop::sample::select(vec!["a", "b"]),
            prop::sample::select(vec!["x", "y"])
        )
            .prop_map(|(d, n)| t(d, n)),
    ]
}

fn privileges() -> impl Strategy<Value = P> {
    prop::sample::select(P::ALL.to_vec())
}

/// A grant or revoke: privilege, object, whether it grants, the grant option.
type Step = (P, GrantObject, bool, bool);

fn apply(r: &mut UserRights, (p, object, grant, option): &Step) {
    let flags = p.flags() & grantable_at(object.level());
    if *grant {
        r.grant(flags, object, *option);
    } else {
        r.revoke(flags, object, *option);
    }
}

proptest! {
    /// Whatever came before, revoking `ALL ON *.*` leaves no access anywhere, and granting then
    /// revoking a privilege on an object leaves it held nowhere inside that object.
    #[test]
    fn grant_then_revoke_leaves_no_access(
        steps in prop::collection::vec((privileges(), objects(), any::<bool>(), any::<bool>()), 0..12),
        p in privileges(),
        object in objects(),
        probe in objects(),
    ) {
        let mut r = UserRights::default();
        for step in &steps {
            apply(&mut r, step);
        }
        let mut revoked = r.clone();
        let flags = p.flags() & grantable_at(object.level());
        revoked.grant(flags, &object, true);
        revoked.revoke(flags, &object, false);
        let inside = match (&object, &probe) {
            (GrantObject::Global, _) => true,
            (GrantObject::Database(d), GrantObject::Database(e)) => d == e,
            (GrantObject::Database(d), GrantObject::Table { database, .. }) => d == database,
            (a, b) => a == b,
        };
        if inside {
            let wanted = flags & grantable_at(probe.level());
            prop_assert_eq!(revoked.access.at(&probe) & wanted, 0);
            prop_assert_eq!(revoked.grant_option.at(&probe) & wanted, 0);
        }
        let mut none = r;
        none.revoke(all_flags(), &GrantObject::Global, false);
        prop_assert_eq!(none, UserRights::default());
    }

    /// The grant option never exceeds access, and `SHOW GRANTS` replayed gives the same rights.
    #[test]
    fn show_grants_replays_to_the_same_rights(
        steps in prop::collection::vec((privileges(), objects(), any::<bool>(), any::<bool>()), 0..10),
    ) {
        let mut r = UserRights::default();
        for step in &steps {
            apply(&mut r, step);
        }
        for (object, flags) in rights_entries(&r.grant_option) {
            prop_assert_eq!(flags & !r.access.at(&object), 0, "{}", object);
        }
        let mut replayed = UserRights::default();
        for line in r.show("u") {
            replay(&mut replayed, &line);
        }
        prop_assert_eq!(&replayed, &r, "{:?}", r.show("u"));
    }
}

fn rights_entries(rights: &Rights) -> Vec<(GrantObject, Flags)> {
    let mut out = vec![(GrantObject::Global, rights.global)];
    out.extend(rights.databases.iter().map(|(d, f)| (db(d), *f)));
    out.extend(rights.tables.iter().map(|((d, n), f)| (t(d, n), *f)));
    out
}

/// Applies one `SHOW GRANTS` line (the forms `UserRights::show` prints).
fn replay(r: &mut UserRights, line: &str) {
    let (revoke, rest) = match line.strip_prefix("GRANT ") {
        Some(rest) => (false, rest),
        None => (true, line.strip_prefix("REVOKE ").expect(line)),
    };
    let (option, rest) = match rest.strip_prefix("GRANT OPTION FOR ") {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let (names, rest) = rest.split_once(" ON ").expect(line);
    let object_text = rest.split(' ').next().expect(line);
    let object = match object_text.split_once('.').expect(line) {
        ("*", "*") => GrantObject::Global,
        (d, "*") => db(d),
        (d, n) => t(d, n),
    };
    let flags = names
        .split(", ")
        .map(|n| P::from_name(n).expect(n).flags())
        .fold(0, |a, f| a | f)
        & grantable_at(object.level());
    if revoke {
        r.revoke(flags, &object, option);
    } else {
        r.grant(flags, &object, line.ends_with("WITH GRANT OPTION"));
    }
}
