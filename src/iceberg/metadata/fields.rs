//! Typed reads out of a JSON object, with errors that name the metadata file and the field's JSON
//! path (`snapshots[3].timestamp-ms`). A `null` counts as absent, as Iceberg writers use both.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// One JSON object inside a metadata file, with its path for messages.
#[derive(Clone)]
pub(crate) struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
    file: &'a str,
}

/// `INCORRECT_DATA` naming the file and field.
pub(crate) fn field_error(file: &str, path: &str, what: &str) -> Error {
    Error::incorrect_data(format!(
        "Cannot parse Iceberg metadata file '{file}': field '{path}' {what}"
    ))
}

/// A short name of a JSON value's type, for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> Obj<'a> {
    /// The top-level object of `file`.
    pub(crate) fn root(map: &'a Map<String, Value>, file: &'a str) -> Self {
        Obj {
            map,
            path: String::new(),
            file,
        }
    }

    /// A nested object at JSON path `path` of `file` (an array item read on its own).
    pub(crate) fn at(map: &'a Map<String, Value>, path: String, file: &'a str) -> Self {
        Obj { map, path, file }
    }

    /// The path of `key` inside this object.
    pub(crate) fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn wrong_type(&self, key: &str, expected: &str, got: &Value) -> Error {
        field_error(
            self.file,
            &self.child_path(key),
            &format!("must be {expected}, got {}", type_name(got)),
        )
    }

    fn missing(&self, key: &str) -> Error {
        field_error(self.file, &self.child_path(key), "is missing")
    }

    /// The value of `key`; `None` when absent or `null`.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Whether `key` is present with a non-null value.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub(crate) fn opt_i64(&self, key: &str) -> Result<Option<i64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.wrong_type(key, "a 64-bit integer", v)),
            Some(v) => Err(self.wrong_type(key, "an integer", v)),
        }
    }

    pub(crate) fn req_i64(&self, key: &str) -> Result<i64> {
        self.opt_i64(key)?.ok_or_else(|| self.missing(key))
    }

    pub(crate) fn opt_i32(&self, key: &str) -> Result<Option<i32>> {
        match self.opt_i64(key)? {
            None => Ok(None),
            Some(n) => i32::try_from(n).map(Some).map_err(|_| {
                field_error(
                    self.file,
                    &self.child_path(key),
                    &format!("must be a 32-bit integer, got {n}"),
                )
            }),
        }
    }

    pub(crate) fn req_i32(&self, key: &str) -> Result<i32> {
        self.opt_i32(key)?.ok_or_else(|| self.missing(key))
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(self.wrong_type(key, "a string", v)),
        }
    }

    pub(crate) fn req_str(&self, key: &str) -> Result<&'a str> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    /// A nested object; `None` when absent.
    pub(crate) fn opt_obj(&self, key: &str) -> Result<Option<Obj<'a>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Obj {
                map,
                path: self.child_path(key),
                file: self.file,
            })),
            Some(v) => Err(self.wrong_type(key, "an object", v)),
        }
    }

    /// A nested array; `None` when absent.
    pub(crate) fn opt_array(&self, key: &str) -> Result<Option<&'a Vec<Value>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(v) => Err(self.wrong_type(key, "an array", v)),
        }
    }

    /// The objects of array `key` (empty when absent), each with its `key[i]` path.
    pub(crate) fn objects(&self, key: &str) -> Result<Vec<Obj<'a>>> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(Vec::new());
        };
        let base = self.child_path(key);
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let path = format!("{base}[{i}]");
                match item {
                    Value::Object(map) => Ok(Obj {
                        map,
                        path,
                        file: self.file,
                    }),
                    other => Err(field_error(
                        self.file,
                        &path,
                        &format!("must be an object, got {}", type_name(other)),
                    )),
                }
            })
            .collect()
    }

    /// The strings of array `key` (empty when absent).
    pub(crate) fn strings(&self, key: &str) -> Result<Vec<String>> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(Vec::new());
        };
        let base = self.child_path(key);
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(field_error(
                    self.file,
                    &format!("{base}[{i}]"),
                    &format!("must be a string, got {}", type_name(other)),
                )),
            })
            .collect()
    }

    /// The members of this object as (key, value) in file order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&'a String, &'a Value)> {
        self.map.iter()
    }

    /// The object found at member `key` of this object, for maps of objects (`refs`).
    pub(crate) fn member_obj(&self, key: &str, value: &'a Value) -> Result<Obj<'a>> {
        match value {
            Value::Object(map) => Ok(Obj {
                map,
                path: self.child_path(key),
                file: self.file,
            }),
            other => Err(self.wrong_type(key, "an object", other)),
        }
    }

    /// A string member of a map of strings (`properties`, `summary`).
    pub(crate) fn member_string(&self, key: &str, value: &Value) -> Result<String> {
        match value {
            Value::String(s) => Ok(s.clone()),
            other => Err(self.wrong_type(key, "a string", other)),
        }
    }

    /// An error about member `key` of this object.
    pub(crate) fn error(&self, key: &str, what: &str) -> Error {
        field_error(self.file, &self.child_path(key), what)
    }
}
