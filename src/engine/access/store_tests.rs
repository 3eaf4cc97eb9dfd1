//! The grant store: users, the grant option, levels, and the file it is kept in.

use super::*;

fn change(
    privileges: &[Privilege],
    object: GrantObject,
    users: &[&str],
    option: bool,
) -> GrantChange {
    GrantChange {
        privileges: privileges.to_vec(),
        object,
        users: users.iter().map(|u| u.to_string()).collect(),
        grant_option: option,
    }
}

fn t() -> GrantObject {
    GrantObject::table("db", "t")
}

#[test]
fn only_a_holder_of_the_grant_option_grants() {
    let mut users = Users::default();
    for u in ["u2", "u3", "u4"] {
        users.create(u, false).unwrap();
    }
    let exec = [Privilege::AlterExecute];
    users
        .change(DEFAULT_USER, &change(&exec, t(), &["u2"], true), true)
        .unwrap();
    users
        .change(DEFAULT_USER, &change(&exec, t(), &["u3"], false), true)
        .unwrap();
    // u2 holds the grant option: it may pass the privilege on.
    users
        .change("u2", &change(&exec, t(), &["u4"], false), true)
        .unwrap();
    // u3 holds the privilege only.
    let denied = users
        .change("u3", &change(&exec, t(), &["u4"], false), true)
        .unwrap_err();
    assert_eq!(denied.kind(), ErrorKind::AccessDenied);
    assert_eq!(
        denied.message(),
        "u3: Not enough privileges. To execute this query, it's necessary to have the grant \
         ALTER EXECUTE ON db.t WITH GRANT OPTION"
    );
    // Nor wider than held: u2 has it on db.t, not on db.*.
    let wider = change(&exec, GrantObject::Database("db".into()), &["u4"], false);
    assert_eq!(
        users.change("u2", &wider, true).unwrap_err().kind(),
        ErrorKind::AccessDenied
    );
}

#[test]
fn users_must_exist_and_default_is_built_in() {
    let mut users = Users::default();
    let grant = change(&[Privilege::Select], t(), &["ghost"], false);
    let error = users.change(DEFAULT_USER, &grant, true).unwrap_err();
    assert_eq!(
        (error.code(), error.message()),
        (192, "There is no user `ghost` in `user directories`")
    );
    assert_eq!(users.drop_user("ghost", false).unwrap_err().code(), 192);
    assert!(!users.drop_user("ghost", true).unwrap());
    assert_eq!(users.create(DEFAULT_USER, false).unwrap_err().code(), 493);
    assert!(!users.create(DEFAULT_USER, true).unwrap());
    assert_eq!(
        users.drop_user(DEFAULT_USER, false).unwrap_err().kind(),
        ErrorKind::QueryIsProhibited
    );
    users.create("u", false).unwrap();
    assert_eq!(users.create("u", false).unwrap_err().code(), 493);
    assert_eq!(users.names(), ["default", "u"]);
}

#[test]
fn a_privilege_is_granted_only_where_it_applies() {
    let mut users = Users::default();
    users.create("u", false).unwrap();
    let on_table = change(&[Privilege::CreateDatabase], t(), &["u"], false);
    let error = users.change(DEFAULT_USER, &on_table, true).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidGrant);
    assert_eq!(
        error.message(),
        "CREATE DATABASE cannot be granted on the table level"
    );
    let user_on_db = change(
        &[Privilege::CreateUser],
        GrantObject::Database("db".into()),
        &["u"],
        false,
    );
    assert_eq!(
        users
            .change(DEFAULT_USER, &user_on_db, true)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidGrant
    );
    // A group keeps what applies: ALL on a table.
    let all = change(&[Privilege::All], t(), &["u"], false);
    users.change(DEFAULT_USER, &all, true).unwrap();
    assert_eq!(users.show_grants("u").unwrap(), ["GRANT ALL ON db.t TO u"]);
}

#[test]
fn the_store_decides_for_default_and_for_granted_users() {
    let store = GrantStore::default();
    assert!(store.allows(DEFAULT_USER, Privilege::All, &GrantObject::Global));
    store.edit(|u| u.create("u", false).map(|_| ())).unwrap();
    assert!(!store.allows("u", Privilege::AlterExecute, &t()));
    assert!(!store.allows_any("u", &t()));
    store
        .edit(|u| {
            u.change(
                DEFAULT_USER,
                &change(&[Privilege::AlterTable], t(), &["u"], false),
                true,
            )
        })
        .unwrap();
    assert!(store.allows("u", Privilege::AlterExecute, &t()));
    assert!(store.allows_any("u", &t()));
    assert!(store.allows_any("u", &GrantObject::Database("db".into())));
    assert!(!store.allows_any("u", &GrantObject::table("db", "other")));
    assert!(!store.allows("nobody", Privilege::Select, &t()));
}

#[cfg(unix)]
#[test]
fn users_and_grants_persist_privately_and_reload() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = GrantStore::open(Some(dir.path())).unwrap();
    store
        .edit(|u| {
            u.create("ops", false)?;
            u.change(
                DEFAULT_USER,
                &change(
                    &[Privilege::Optimize],
                    GrantObject::Database("db".into()),
                    &["ops"],
                    true,
                ),
                true,
            )?;
            u.change(
                DEFAULT_USER,
                &change(&[Privilege::Optimize], t(), &["ops"], false),
                false,
            )
        })
        .unwrap();
    let file = dir.path().join("access.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let again = GrantStore::open(Some(dir.path())).unwrap();
    assert_eq!(again.users(), store.users());
    assert_eq!(
        again.users().show_grants("ops").unwrap(),
        [
            "GRANT OPTIMIZE ON db.* TO ops WITH GRANT OPTION",
            "REVOKE OPTIMIZE ON db.t FROM ops"
        ]
    );
    // A change that fails changes nothing, in memory or on disk.
    let before = std::fs::read(&file).unwrap();
    let failed = again.edit(|u| {
        u.create("half", false)?;
        u.drop_user("ghost", false).map(|_| ())
    });
    assert_eq!(failed.unwrap_err().code(), 192);
    assert!(!again.exists("half"));
    assert_eq!(std::fs::read(&file).unwrap(), before);
    // A damaged file is refused, not read as "no users".
    std::fs::write(&file, b"{not json").unwrap();
    assert_eq!(GrantStore::open(Some(dir.path())).unwrap_err().code(), 117);
}
