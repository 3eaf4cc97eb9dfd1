//! One user's access rights as ClickHouse keeps them: the privileges held on `*.*`, on each
//! `db.*` and on each `db.t` that differs from what it inherits, twice (what the user may do, and
//! what the user may grant on), and the `GRANT`/`REVOKE` lines `SHOW GRANTS` prints for them.
//!
//! A grant adds its bits to the object and to everything below it that has rights of its own; a
//! revoke takes them away the same way, so `REVOKE ALTER TABLE` after `GRANT ALTER EXECUTE`
//! leaves nothing, and `REVOKE SELECT ON db.t` after `GRANT SELECT ON *.*` is a partial revoke
//! that `SHOW GRANTS` prints as such. Pure data: no I/O.

use std::collections::BTreeMap;

use super::GrantObject;
use super::privilege::{Flags, Level, grantable_at, list, names};

/// Privilege bits per object; an object absent from the maps inherits from the one above it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rights {
    pub(crate) global: Flags,
    pub(crate) databases: BTreeMap<String, Flags>,
    pub(crate) tables: BTreeMap<(String, String), Flags>,
}

impl Rights {
    /// Rights holding `flags` everywhere.
    pub(crate) fn everywhere(flags: Flags) -> Rights {
        Rights {
            global: flags,
            ..Rights::default()
        }
    }

    /// The bits in force on `object` itself.
    pub(crate) fn at(&self, object: &GrantObject) -> Flags {
        match object {
            GrantObject::Global => self.global,
            GrantObject::Database(db) => self.database(db),
            GrantObject::Table { database, table } => self
                .tables
                .get(&(database.clone(), table.clone()))
                .copied()
                .unwrap_or_else(|| self.database(database)),
        }
    }

    fn database(&self, db: &str) -> Flags {
        self.databases.get(db).copied().unwrap_or(self.global)
    }

    /// Whether every bit of `flags` is held on `object` and on everything below it (a partial
    /// revoke below `db.*` means `db.*` is not fully held).
    pub(crate) fn holds(&self, flags: Flags, object: &GrantObject) -> bool {
        let inside = |at: Flags, level: Level| {
            let wanted = flags & grantable_at(level);
            at & wanted == wanted
        };
        let here = self.at(object) & flags == flags;
        here && match object {
            GrantObject::Global => {
                self.databases.values().all(|f| inside(*f, Level::Database))
                    && self.tables.values().all(|f| inside(*f, Level::Table))
            }
            GrantObject::Database(db) => self
                .tables
                .iter()
                .filter(|((d, _), _)| d == db)
                .all(|(_, f)| inside(*f, Level::Table)),
            GrantObject::Table { .. } => true,
        }
    }

    /// Whether any bit of `mask` is held on `object` or anything below it.
    pub(crate) fn any(&self, mask: Flags, object: &GrantObject) -> bool {
        if self.at(object) & mask != 0 {
            return true;
        }
        match object {
            GrantObject::Global => {
                self.databases.values().any(|f| f & mask != 0)
                    || self.tables.values().any(|f| f & mask != 0)
            }
            GrantObject::Database(db) => self
                .tables
                .iter()
                .any(|((d, _), f)| d == db && f & mask != 0),
            GrantObject::Table { .. } => false,
        }
    }

    /// Adds (`grant`) or takes away `flags` on `object` and below.
    pub(crate) fn change(&mut self, flags: Flags, object: &GrantObject, grant: bool) {
        let apply = |f: &mut Flags| {
            if grant {
                *f |= flags;
            } else {
                *f &= !flags;
            }
        };
        match object {
            GrantObject::Global => {
                apply(&mut self.global);
                self.databases.values_mut().for_each(apply);
                self.tables.values_mut().for_each(apply);
            }
            GrantObject::Database(db) => {
                let mut here = self.database(db);
                apply(&mut here);
                self.databases.insert(db.clone(), here);
                self.tables
                    .iter_mut()
                    .filter(|((d, _), _)| d == db)
                    .for_each(|(_, f)| apply(f));
            }
            GrantObject::Table { database, table } => {
                let mut here = self.at(object);
                apply(&mut here);
                self.tables.insert((database.clone(), table.clone()), here);
            }
        }
        self.normalize();
    }

    /// Drops every entry equal to what it would inherit.
    fn normalize(&mut self) {
        let global = self.global;
        self.databases.retain(|_, f| *f != global);
        let databases = self.databases.clone();
        self.tables.retain(|(db, _), f| {
            let inherited = databases.get(db).copied().unwrap_or(global);
            *f != inherited
        });
    }

    /// The objects with rights of their own, `*.*` first, each with the bits it inherits.
    fn nodes(&self) -> Vec<(GrantObject, Flags, Flags, Level)> {
        let mut out = vec![(GrantObject::Global, self.global, 0, Level::Global)];
        let mut objects: Vec<GrantObject> = self
            .databases
            .keys()
            .map(|d| GrantObject::Database(d.clone()))
            .collect();
        objects.extend(self.tables.keys().map(|(d, t)| GrantObject::Table {
            database: d.clone(),
            table: t.clone(),
        }));
        objects.sort();
        objects.dedup();
        for object in objects {
            let (parent, level) = match &object {
                GrantObject::Database(_) => (self.global, Level::Database),
                GrantObject::Table { database, .. } => (self.database(database), Level::Table),
                GrantObject::Global => continue,
            };
            out.push((object.clone(), self.at(&object), parent, level));
        }
        out
    }
}

/// What a user may do, and what the user may grant on to others (always a part of the first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UserRights {
    pub(crate) access: Rights,
    pub(crate) grant_option: Rights,
}

impl UserRights {
    /// `GRANT flags ON object [WITH GRANT OPTION]`.
    pub(crate) fn grant(&mut self, flags: Flags, object: &GrantObject, with_grant_option: bool) {
        self.access.change(flags, object, true);
        if with_grant_option {
            self.grant_option.change(flags, object, true);
        }
    }

    /// `REVOKE [GRANT OPTION FOR] flags ON object`.
    pub(crate) fn revoke(&mut self, flags: Flags, object: &GrantObject, grant_option_only: bool) {
        if !grant_option_only {
            self.access.change(flags, object, false);
        }
        self.grant_option.change(flags, object, false);
    }

    /// `SHOW GRANTS FOR user`: ClickHouse's statements, one per object and kind, `*.*` first.
    pub(crate) fn show(&self, user: &str) -> Vec<String> {
        let user = quoted_user(user);
        let options: BTreeMap<GrantObject, (Flags, Flags)> = self
            .grant_option
            .nodes()
            .into_iter()
            .map(|(object, here, parent, _)| (object, (here, parent)))
            .collect();
        let mut objects = self.access.nodes();
        for (object, _) in options.iter() {
            if !objects.iter().any(|(o, ..)| o == object) {
                let level = object.level();
                let parent = match object {
                    GrantObject::Global => 0,
                    GrantObject::Database(_) => self.access.global,
                    GrantObject::Table { database, .. } => self.access.database(database),
                };
                objects.push((object.clone(), self.access.at(object), parent, level));
            }
        }
        objects.sort_by(|a, b| order_key(&a.0).cmp(&order_key(&b.0)));
        let mut lines = Vec::new();
        for (object, here, parent, level) in objects {
            let mask = grantable_at(level);
            let (option, option_parent) = options.get(&object).copied().unwrap_or_else(|| {
                let inherited = self.grant_option.at(&object);
                (inherited, inherited)
            });
            let option_parent = if object == GrantObject::Global {
                0
            } else {
                option_parent
            };
            let mut line = |verb: &str, flags: Flags, tail: &str| {
                let named = names(flags, mask);
                if !named.is_empty() {
                    let to = if verb == "GRANT" { "TO" } else { "FROM" };
                    lines.push(format!(
                        "{verb} {} ON {object} {to} {user}{tail}",
                        list(&named)
                    ));
                }
            };
            line("GRANT", here & !parent & !option, "");
            line("GRANT", option & !option_parent, " WITH GRANT OPTION");
            line("REVOKE", parent & !here, "");
            line(
                "REVOKE GRANT OPTION FOR",
                option_parent & !option & here,
                "",
            );
        }
        lines
    }
}

/// `*.*` first, then by database, `db.*` before its tables.
fn order_key(object: &GrantObject) -> (bool, &str, Option<&str>) {
    match object {
        GrantObject::Global => (false, "", None),
        GrantObject::Database(db) => (true, db, None),
        GrantObject::Table { database, table } => (true, database, Some(table)),
    }
}

/// A user name as ClickHouse prints it in grants: bare when a plain word, else back-quoted.
pub(crate) fn quoted_user(user: &str) -> String {
    let plain = user
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && user.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        user.to_string()
    } else {
        format!("`{}`", user.replace('`', "``"))
    }
}

#[cfg(test)]
#[path = "rights_tests.rs"]
mod tests;
