//! icetrim's own grant store, the default [`Authorizer`]: its users and their rights, changed by
//! `CREATE USER`, `DROP USER`, `GRANT` and `REVOKE`, and, with a data path, kept in one file
//! (`<path>/access.json`, mode 0600, written to a temporary file and renamed into place, so a
//! crash leaves the old file or the new one) that is read when the engine starts.
//!
//! The user `default` is built in: it holds every privilege with the grant option, is never
//! written down, and cannot be dropped or changed. Every change is made on a copy, written, then
//! put in place: a change that cannot be saved changes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

use super::privilege::{Flags, all_flags};
use super::rights::{Rights, UserRights};
use super::{Authorizer, DEFAULT_USER, GrantObject, Privilege, grantable_at};
use crate::error::{Error, ErrorKind, Result};

/// The file under the data path.
const FILE: &str = "access.json";

/// The users and their rights; `default` is not among them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Users(BTreeMap<String, UserRights>);

/// A `GRANT` or `REVOKE` as the store applies it.
#[derive(Debug, Clone)]
pub(crate) struct GrantChange {
    pub privileges: Vec<Privilege>,
    pub object: GrantObject,
    pub users: Vec<String>,
    /// `GRANT … WITH GRANT OPTION`, or `REVOKE GRANT OPTION FOR …`.
    pub grant_option: bool,
}

impl Users {
    fn rights(&self, user: &str) -> Option<UserRights> {
        if user == DEFAULT_USER {
            let all = Rights::everywhere(all_flags());
            return Some(UserRights {
                access: all.clone(),
                grant_option: all,
            });
        }
        self.0.get(user).cloned()
    }

    fn exists(&self, user: &str) -> bool {
        user == DEFAULT_USER || self.0.contains_key(user)
    }

    /// The user names, `default` included, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.0.keys().cloned().collect();
        names.push(DEFAULT_USER.to_string());
        names.sort();
        names
    }

    pub(crate) fn create(&mut self, user: &str, if_not_exists: bool) -> Result<bool> {
        if self.exists(user) {
            if if_not_exists {
                return Ok(false);
            }
            return Err(Error::new(
                ErrorKind::AccessEntityAlreadyExists,
                format!("user `{user}`: cannot insert because user `{user}` already exists"),
            ));
        }
        self.0.insert(user.to_string(), UserRights::default());
        Ok(true)
    }

    pub(crate) fn drop_user(&mut self, user: &str, if_exists: bool) -> Result<bool> {
        if user == DEFAULT_USER {
            return Err(built_in());
        }
        match self.0.remove(user) {
            Some(_) => Ok(true),
            None if if_exists => Ok(false),
            None => Err(unknown_user(user)),
        }
    }

    /// `GRANT` (`grant`) or `REVOKE` by `granter`, who needs the grant option on all of it.
    pub(crate) fn change(
        &mut self,
        granter: &str,
        change: &GrantChange,
        grant: bool,
    ) -> Result<()> {
        let mask = grantable_at(change.object.level());
        let mut flags: Flags = 0;
        for privilege in &change.privileges {
            if privilege.is_leaf() && privilege.bit() & mask == 0 {
                return Err(Error::new(
                    ErrorKind::InvalidGrant,
                    format!(
                        "{privilege} cannot be granted on the {} level",
                        level_name(&change.object)
                    ),
                ));
            }
            flags |= privilege.flags() & mask;
        }
        let held = self
            .rights(granter)
            .is_some_and(|r| r.grant_option.holds(flags, &change.object));
        if !held {
            let what = super::privilege::names(flags, mask);
            return Err(super::denied(
                granter,
                &format!(
                    "{} ON {} WITH GRANT OPTION",
                    super::privilege::list(&what),
                    change.object
                ),
            ));
        }
        for user in &change.users {
            if user == DEFAULT_USER {
                return Err(built_in());
            }
            if !self.exists(user) {
                return Err(unknown_user(user));
            }
        }
        for user in &change.users {
            if let Some(rights) = self.0.get_mut(user) {
                if grant {
                    rights.grant(flags, &change.object, change.grant_option);
                } else {
                    rights.revoke(flags, &change.object, change.grant_option);
                }
            }
        }
        Ok(())
    }

    /// `SHOW GRANTS [FOR user]`.
    pub(crate) fn show_grants(&self, user: &str) -> Result<Vec<String>> {
        if user == DEFAULT_USER {
            return Ok(vec![format!(
                "GRANT ALL ON *.* TO {DEFAULT_USER} WITH GRANT OPTION"
            )]);
        }
        let rights = self.0.get(user).ok_or_else(|| unknown_user(user))?;
        Ok(rights.show(user))
    }
}

fn level_name(object: &GrantObject) -> &'static str {
    match object {
        GrantObject::Global => "global",
        GrantObject::Database(_) => "database",
        GrantObject::Table { .. } => "table",
    }
}

/// `UNKNOWN_USER`, as ClickHouse words it.
pub(crate) fn unknown_user(user: &str) -> Error {
    Error::new(
        ErrorKind::UnknownUser,
        format!("There is no user `{user}` in `user directories`"),
    )
}

fn built_in() -> Error {
    Error::new(
        ErrorKind::QueryIsProhibited,
        format!(
            "The user `{DEFAULT_USER}` is built in: it holds every privilege and cannot be \
             dropped, granted to or revoked from"
        ),
    )
}

/// The grant store: the users, and the file they are kept in (none: in memory).
#[derive(Debug, Default)]
pub(crate) struct GrantStore {
    users: RwLock<Users>,
    file: Option<PathBuf>,
}

impl GrantStore {
    /// The store of `data_path` (read now if the file is there), or an empty one in memory.
    pub(crate) fn open(data_path: Option<&Path>) -> Result<GrantStore> {
        let Some(dir) = data_path else {
            return Ok(GrantStore::default());
        };
        let file = dir.join(FILE);
        let users = match std::fs::read(&file) {
            Ok(bytes) => decode(&bytes).map_err(|e| {
                Error::incorrect_data(format!(
                    "Cannot read users and grants {}: {e}",
                    file.display()
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Users::default(),
            Err(e) => return Err(super::super::registry::io_error("read", &file, e)),
        };
        Ok(GrantStore {
            users: RwLock::new(users),
            file: Some(file),
        })
    }

    /// A copy of the users (a poisoned lock reads as no users: everything is denied).
    pub(crate) fn users(&self) -> Users {
        self.users.read().map(|u| u.clone()).unwrap_or_default()
    }

    /// Applies `edit` to a copy of the users, saves the copy, then puts it in place.
    pub(crate) fn edit<T>(&self, edit: impl FnOnce(&mut Users) -> Result<T>) -> Result<T> {
        let mut users = self
            .users
            .write()
            .map_err(|_| Error::logical("the grant store's lock is poisoned"))?;
        let mut next = users.clone();
        let out = edit(&mut next)?;
        if next != *users {
            if let Some(file) = &self.file {
                let bytes = encode(&next)?;
                super::super::registry::write_private(file, &bytes)
                    .map_err(|e| super::super::registry::io_error("write", file, e))?;
            }
            *users = next;
        }
        Ok(out)
    }

    pub(crate) fn exists(&self, user: &str) -> bool {
        self.users.read().is_ok_and(|u| u.exists(user))
    }
}

impl Authorizer for GrantStore {
    fn allows(&self, user: &str, privilege: Privilege, object: &GrantObject) -> bool {
        let Ok(users) = self.users.read() else {
            return false;
        };
        let flags = privilege.flags() & grantable_at(object.level());
        users
            .rights(user)
            .is_some_and(|r| flags != 0 && r.access.holds(flags, object))
    }

    fn allows_any(&self, user: &str, object: &GrantObject) -> bool {
        let Ok(users) = self.users.read() else {
            return false;
        };
        let mask = grantable_at(super::Level::Table);
        users
            .rights(user)
            .is_some_and(|r| r.access.any(mask, object))
    }
}

/// The file's form: per user, per object with rights of its own, the privileges held there by
/// name (so the file stays readable and survives new privileges).
#[derive(Serialize, Deserialize)]
struct StoredUser {
    access: Vec<StoredRights>,
    grant_option: Vec<StoredRights>,
}

#[derive(Serialize, Deserialize)]
struct StoredRights {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    database: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    table: Option<String>,
    privileges: Vec<String>,
}

fn encode(users: &Users) -> Result<Vec<u8>> {
    let stored: BTreeMap<&String, StoredUser> = users
        .0
        .iter()
        .map(|(name, r)| {
            let user = StoredUser {
                access: store_rights(&r.access),
                grant_option: store_rights(&r.grant_option),
            };
            (name, user)
        })
        .collect();
    serde_json::to_vec_pretty(&serde_json::json!({ "users": stored }))
        .map_err(|e| Error::logical(format!("Cannot serialize users and grants: {e}")))
}

fn store_rights(rights: &Rights) -> Vec<StoredRights> {
    let names = |flags: Flags| {
        Privilege::ALL
            .iter()
            .filter(|p| flags & p.bit() != 0)
            .map(|p| p.name().to_string())
            .collect()
    };
    let mut out = vec![StoredRights {
        database: None,
        table: None,
        privileges: names(rights.global),
    }];
    out.extend(rights.databases.iter().map(|(db, f)| StoredRights {
        database: Some(db.clone()),
        table: None,
        privileges: names(*f),
    }));
    out.extend(rights.tables.iter().map(|((db, t), f)| StoredRights {
        database: Some(db.clone()),
        table: Some(t.clone()),
        privileges: names(*f),
    }));
    out
}

fn decode(bytes: &[u8]) -> std::result::Result<Users, String> {
    #[derive(Deserialize)]
    struct File {
        users: BTreeMap<String, StoredUser>,
    }
    let file: File = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let mut users = Users::default();
    for (name, stored) in file.users {
        if name == DEFAULT_USER {
            return Err(format!("the user `{DEFAULT_USER}` is built in"));
        }
        let rights = UserRights {
            access: load_rights(&stored.access)?,
            grant_option: load_rights(&stored.grant_option)?,
        };
        users.0.insert(name, rights);
    }
    Ok(users)
}

fn load_rights(stored: &[StoredRights]) -> std::result::Result<Rights, String> {
    let mut rights = Rights::default();
    for entry in stored {
        let mut flags: Flags = 0;
        for name in &entry.privileges {
            let privilege =
                Privilege::from_name(name).ok_or_else(|| format!("unknown privilege {name}"))?;
            flags |= privilege.bit();
        }
        match (&entry.database, &entry.table) {
            (None, None) => rights.global = flags,
            (Some(db), None) => {
                rights.databases.insert(db.clone(), flags);
            }
            (Some(db), Some(t)) => {
                rights.tables.insert((db.clone(), t.clone()), flags);
            }
            (None, Some(t)) => return Err(format!("table {t} has no database")),
        }
    }
    Ok(rights)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
