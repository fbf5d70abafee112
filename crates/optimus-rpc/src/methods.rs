//! Method tables: the methods of one `.proto` service, in declaration order, so that a method's
//! id on the wire is its index.
//!
//! The CLI fills a table from the schema compiler's service list; the library itself only needs
//! names, ids and (for typed payloads) the request and response message names.

use optimus_schema::{SchemaSet, Service};

use crate::RpcError;

/// One method of a service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Method {
    /// Method name as declared (`Echo`).
    pub name: String,
    /// Fully qualified request message (`pkg.EchoRequest`).
    pub input: String,
    /// Fully qualified response message (`pkg.EchoReply`).
    pub output: String,
}

/// The methods of one service; method id = index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MethodTable {
    /// Fully qualified service name (`pkg.Service`).
    pub service: String,
    /// Methods in declaration order.
    pub methods: Vec<Method>,
}

impl MethodTable {
    /// A table for `service` with `methods` in declaration order.
    ///
    /// # Errors
    /// More methods than a 16-bit id can name, or a name declared twice.
    pub fn new(service: impl Into<String>, methods: Vec<Method>) -> Result<Self, RpcError> {
        if methods.len() > usize::from(u16::MAX) {
            return Err(RpcError::Config(format!(
                "{} methods do not fit a 16-bit method id",
                methods.len()
            )));
        }
        for (i, m) in methods.iter().enumerate() {
            if methods[..i].iter().any(|o| o.name == m.name) {
                return Err(RpcError::Config(format!(
                    "method {} declared twice",
                    m.name
                )));
            }
        }
        Ok(Self {
            service: service.into(),
            methods,
        })
    }

    /// The table of `svc`, a service of `schema`: its methods' names and message types.
    ///
    /// # Errors
    /// As [`MethodTable::new`].
    pub fn for_service(schema: &SchemaSet, svc: &Service) -> Result<Self, RpcError> {
        MethodTable::new(
            svc.full_name.clone(),
            svc.methods
                .iter()
                .map(|m| Method {
                    name: m.name.clone(),
                    input: schema.message(m.input).full_name.clone(),
                    output: schema.message(m.output).full_name.clone(),
                })
                .collect(),
        )
    }

    /// The id of method `name`.
    pub fn id_of(&self, name: &str) -> Option<u16> {
        self.methods
            .iter()
            .position(|m| m.name == name)
            .map(|i| i as u16)
    }

    /// The method with id `id`.
    pub fn get(&self, id: u16) -> Option<&Method> {
        self.methods.get(usize::from(id))
    }

    /// Splits `pkg.Service/Method` into service and method names.
    pub fn split_path(path: &str) -> Option<(&str, &str)> {
        let (s, m) = path.trim_start_matches('/').rsplit_once('/')?;
        (!s.is_empty() && !m.is_empty()).then_some((s, m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(n: &str) -> Method {
        Method {
            name: n.into(),
            input: "p.Req".into(),
            output: "p.Rep".into(),
        }
    }

    #[test]
    fn ids_are_declaration_order() {
        let t = MethodTable::new("p.S", vec![m("A"), m("B")]).unwrap();
        assert_eq!(t.id_of("B"), Some(1));
        assert_eq!(t.get(0).unwrap().name, "A");
        assert_eq!(t.id_of("C"), None);
        assert!(MethodTable::new("p.S", vec![m("A"), m("A")]).is_err());
        assert_eq!(MethodTable::split_path("/p.S/Echo"), Some(("p.S", "Echo")));
        assert_eq!(MethodTable::split_path("Echo"), None);
    }
}
