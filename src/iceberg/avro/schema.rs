//! An Avro writer schema as a tree the decoders walk, parsed from the schema JSON of a file header.
//!
//! We parse the JSON ourselves (serde_json) rather than through `apache_avro::Schema` because we need
//! the Iceberg attributes (`field-id`) and because the JSON string itself is kept verbatim for
//! rewriting. Named types (`record`, `fixed`, `enum`) may be referenced by name after their definition;
//! a reference to a record still being defined (a recursive type) is refused: Iceberg never writes one.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value as Json;

/// One Avro type.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Fixed { name: String, size: usize },
    Enum { name: String, symbols: Vec<String> },
    Array(Box<Node>),
    Map(Box<Node>),
    Union(Vec<Node>),
    Record(Arc<Record>),
}

/// A record type: its name and fields in writer order.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub name: String,
    pub fields: Vec<Field>,
}

/// A record field with its Iceberg `field-id`, when the writer gave one.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub node: Node,
    pub field_id: Option<i32>,
}

impl Record {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

impl Node {
    /// True when a value of this type encodes to zero bytes (so a count of them proves nothing).
    pub fn encodes_empty(&self) -> bool {
        match self {
            Node::Null => true,
            Node::Fixed { size, .. } => *size == 0,
            Node::Record(r) => r.fields.iter().all(|f| f.node.encodes_empty()),
            _ => false,
        }
    }

    /// For `["null", T]` or `[T, "null"]`: `T`. For any other type: itself.
    pub fn non_null(&self) -> &Node {
        match self {
            Node::Union(branches) if branches.len() == 2 => match (&branches[0], &branches[1]) {
                (Node::Null, other) | (other, Node::Null) => other,
                _ => self,
            },
            _ => self,
        }
    }

    /// The record this type is, or is the non-null branch of.
    pub fn as_record(&self) -> Option<&Arc<Record>> {
        match self.non_null() {
            Node::Record(r) => Some(r),
            _ => None,
        }
    }
}

/// Parses an Avro schema JSON text; the error message says what is wrong.
pub fn parse_schema(text: &str) -> Result<Node, String> {
    let json: Json = serde_json::from_str(text).map_err(|e| format!("schema is not JSON: {e}"))?;
    let mut names = Names::default();
    names.node(&json, "")
}

#[derive(Default)]
struct Names {
    defined: HashMap<String, Node>,
    in_progress: Vec<String>,
}

const PRIMITIVES: [(&str, Node); 8] = [
    ("null", Node::Null),
    ("boolean", Node::Boolean),
    ("int", Node::Int),
    ("long", Node::Long),
    ("float", Node::Float),
    ("double", Node::Double),
    ("bytes", Node::Bytes),
    ("string", Node::String),
];

fn primitive(name: &str) -> Option<Node> {
    PRIMITIVES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, node)| node.clone())
}

fn full_name(name: &str, namespace: &str) -> String {
    if name.contains('.') || namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}.{name}")
    }
}

impl Names {
    fn node(&mut self, json: &Json, namespace: &str) -> Result<Node, String> {
        match json {
            Json::String(name) => self.named(name, namespace),
            Json::Array(branches) => {
                let nodes = branches
                    .iter()
                    .map(|b| self.node(b, namespace))
                    .collect::<Result<Vec<_>, _>>()?;
                if nodes.is_empty() {
                    return Err("union with no branches".into());
                }
                Ok(Node::Union(nodes))
            }
            Json::Object(obj) => {
                let kind = obj.get("type").ok_or("schema object without \"type\"")?;
                let Json::String(kind) = kind else {
                    // `{"type": {...}}`: a wrapped type.
                    return self.node(kind, namespace);
                };
                match kind.as_str() {
                    "record" | "error" => self.record(obj, namespace),
                    "array" => Ok(Node::Array(Box::new(self.child(obj, "items", namespace)?))),
                    "map" => Ok(Node::Map(Box::new(self.child(obj, "values", namespace)?))),
                    "fixed" => {
                        let size = obj
                            .get("size")
                            .and_then(Json::as_u64)
                            .ok_or("fixed without size")?;
                        let size = usize::try_from(size).map_err(|_| "fixed size too large")?;
                        let name = self.declare(obj, namespace)?;
                        let node = Node::Fixed {
                            name: name.clone(),
                            size,
                        };
                        self.defined.insert(name, node.clone());
                        Ok(node)
                    }
                    "enum" => {
                        let symbols = obj
                            .get("symbols")
                            .and_then(Json::as_array)
                            .ok_or("enum without symbols")?
                            .iter()
                            .map(|s| {
                                s.as_str()
                                    .map(str::to_string)
                                    .ok_or("enum symbol is not a string")
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        let name = self.declare(obj, namespace)?;
                        let node = Node::Enum {
                            name: name.clone(),
                            symbols,
                        };
                        self.defined.insert(name, node.clone());
                        Ok(node)
                    }
                    other => self.named(other, namespace),
                }
            }
            other => Err(format!("unexpected schema element {other}")),
        }
    }

    fn child(
        &mut self,
        obj: &serde_json::Map<String, Json>,
        key: &str,
        namespace: &str,
    ) -> Result<Node, String> {
        let json = obj
            .get(key)
            .ok_or_else(|| format!("schema without \"{key}\""))?;
        self.node(json, namespace)
    }

    fn named(&self, name: &str, namespace: &str) -> Result<Node, String> {
        if let Some(node) = primitive(name) {
            return Ok(node);
        }
        let full = full_name(name, namespace);
        if self.in_progress.contains(&full) {
            return Err(format!("recursive type {full} is not supported"));
        }
        self.defined
            .get(&full)
            .or_else(|| self.defined.get(name))
            .cloned()
            .ok_or_else(|| format!("unknown type {name}"))
    }

    fn declare(
        &self,
        obj: &serde_json::Map<String, Json>,
        namespace: &str,
    ) -> Result<String, String> {
        let name = obj
            .get("name")
            .and_then(Json::as_str)
            .ok_or("named type without a name")?;
        let ns = obj
            .get("namespace")
            .and_then(Json::as_str)
            .unwrap_or(namespace);
        Ok(full_name(name, ns))
    }

    fn record(
        &mut self,
        obj: &serde_json::Map<String, Json>,
        namespace: &str,
    ) -> Result<Node, String> {
        let full = self.declare(obj, namespace)?;
        let inner_ns = full
            .rsplit_once('.')
            .map(|(ns, _)| ns.to_string())
            .unwrap_or_default();
        let fields_json = obj
            .get("fields")
            .and_then(Json::as_array)
            .ok_or("record without fields")?;
        self.in_progress.push(full.clone());
        let mut fields = Vec::with_capacity(fields_json.len());
        for f in fields_json {
            let name = f
                .get("name")
                .and_then(Json::as_str)
                .ok_or("record field without a name")?;
            let ty = f
                .get("type")
                .ok_or_else(|| format!("field {name} without a type"))?;
            let node = self.node(ty, &inner_ns)?;
            let field_id = f.get("field-id").and_then(json_i32);
            fields.push(Field {
                name: name.to_string(),
                node,
                field_id,
            });
        }
        self.in_progress.pop();
        let short = full.rsplit('.').next().unwrap_or(&full).to_string();
        let node = Node::Record(Arc::new(Record {
            name: short,
            fields,
        }));
        self.defined.insert(full, node.clone());
        Ok(node)
    }
}

/// A JSON number or numeric string as i32 (`field-id` is a number; some writers quote it).
fn json_i32(v: &Json) -> Option<i32> {
    match v {
        Json::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
        Json::String(s) => s.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_named_references_and_field_ids() {
        let text = r#"{"type":"record","name":"a","fields":[
            {"name":"x","type":["null","long"],"field-id":7},
            {"name":"f","type":{"type":"fixed","name":"f16","size":16}},
            {"name":"g","type":"f16"},
            {"name":"m","type":{"type":"array","logicalType":"map","items":{"type":"record","name":"k1_v2",
              "fields":[{"name":"key","type":"int","field-id":1},{"name":"value","type":"long","field-id":2}]}}}
        ]}"#;
        let node = parse_schema(text).unwrap();
        let rec = node.as_record().unwrap();
        assert_eq!(rec.name, "a");
        assert_eq!(rec.field("x").unwrap().field_id, Some(7));
        assert_eq!(rec.field("x").unwrap().node.non_null(), &Node::Long);
        assert_eq!(rec.field("g").unwrap().node, rec.field("f").unwrap().node);
        assert!(matches!(rec.field("m").unwrap().node, Node::Array(_)));
    }

    #[test]
    fn rejects_recursion_and_unknown_names() {
        let rec = r#"{"type":"record","name":"n","fields":[{"name":"next","type":["null","n"]}]}"#;
        assert!(parse_schema(rec).unwrap_err().contains("recursive"));
        assert!(parse_schema(r#""nope""#).is_err());
        assert!(parse_schema("[]").is_err());
        assert!(parse_schema("{").is_err());
    }
}
