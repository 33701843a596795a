//! C spellings of types, as pahole prints them, so output reads like what kernel people know:
//! `long unsigned int`, `struct list_head * *`, `const char  *`, `void (*func)(struct callback_head *)`.

use super::walk::{self, Guard};
use super::{Kind, TypeId, Types};

/// A member declaration split where pahole pads it: the type part, then the declarator
/// (`name`, `name[4]`, `(*name)(int)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decl {
    pub type_part: String,
    pub declarator: String,
}

/// Naming steps allowed for one type (the kernel's deepest needs under 100).
const NAME_BUDGET: usize = 4096;

/// Splits the declaration of a member called `name` of type `ty`.
pub fn member_decl(types: &Types<'_>, ty: TypeId, name: &str) -> Decl {
    let mut dims = String::new();
    let mut t = ty;
    // Arrays: the dimensions go after the name, outermost first.
    for _ in walk::chain() {
        match &types.get(t).kind {
            Kind::Array { elem, count } => {
                if *count == 0 {
                    dims.push_str("[]");
                } else {
                    dims.push('[');
                    dims.push_str(&count.to_string());
                    dims.push(']');
                }
                t = *elem;
            }
            _ => break,
        }
    }
    // Pointers to functions: `ret (*name)(params)`.
    let mut stars = 0;
    let mut p = t;
    for _ in walk::chain() {
        match &types.get(p).kind {
            Kind::Pointer { target } => {
                stars += 1;
                p = *target;
            }
            Kind::TypeTag { target, .. } => p = *target,
            _ => break,
        }
    }
    if stars > 0
        && let Kind::FuncProto {
            ret,
            params,
            variadic,
        } = &types.get(p).kind
    {
        let mut declarator = String::with_capacity(name.len() + 24);
        declarator.push('(');
        for _ in 0..stars {
            declarator.push('*');
        }
        declarator.push_str(name);
        declarator.push_str(&dims);
        declarator.push(')');
        push_params(
            types,
            params,
            *variadic,
            &mut declarator,
            &mut Guard::with_steps(NAME_BUDGET),
        );
        return Decl {
            type_part: type_name(types, *ret),
            declarator,
        };
    }
    let mut declarator = String::with_capacity(name.len() + dims.len());
    declarator.push_str(name);
    declarator.push_str(&dims);
    Decl {
        type_part: type_name(types, t),
        declarator,
    }
}

/// The C name of a type on its own (`struct list_head *`, `long unsigned int`).
pub fn type_name(types: &Types<'_>, ty: TypeId) -> String {
    let mut s = String::new();
    push_name(types, ty, &mut s, &mut Guard::with_steps(NAME_BUDGET));
    s
}

fn push_params(
    types: &Types<'_>,
    params: &[TypeId],
    variadic: bool,
    s: &mut String,
    g: &mut Guard,
) {
    s.push('(');
    if params.is_empty() && !variadic {
        s.push_str("void");
    }
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        if g.spent() {
            // The rest of a prototype that points back at itself: one marker, not one each.
            s.push_str("<type loop>");
            break;
        }
        push_name(types, *p, s, g);
    }
    if variadic {
        if !params.is_empty() {
            s.push_str(", ");
        }
        s.push_str("...");
    }
    s.push(')');
}

fn push_name(types: &Types<'_>, ty: TypeId, s: &mut String, g: &mut Guard) {
    // The guard's depth bounds cycles; its steps bound prototypes whose parameters point
    // back at them, which branch at every level.
    if !g.enter() {
        s.push_str("<type loop>");
        return;
    }
    push_name_inner(types, ty, s, g);
    g.leave();
}

fn push_name_inner(types: &Types<'_>, ty: TypeId, s: &mut String, g: &mut Guard) {
    let t = types.get(ty);
    match &t.kind {
        Kind::Void => s.push_str("void"),
        Kind::Int { .. } | Kind::Float { .. } | Kind::Typedef { .. } | Kind::Other => {
            s.push_str(if t.name.is_empty() { "void" } else { t.name })
        }
        Kind::Struct(_) => tagged(s, "struct", t.name),
        Kind::Union(_) => tagged(s, "union", t.name),
        Kind::Enum { .. } => tagged(s, "enum", t.name),
        Kind::Fwd { is_union } => tagged(s, if *is_union { "union" } else { "struct" }, t.name),
        Kind::Pointer { target } => {
            // A pointer to a function prints as an abstract declarator.
            if let Kind::FuncProto {
                ret,
                params,
                variadic,
            } = &types.get(*target).kind
            {
                push_name(types, *ret, s, g);
                s.push_str(" (*)");
                push_params(types, params, *variadic, s, g);
            } else {
                push_name(types, *target, s, g);
                s.push_str(" *");
            }
        }
        Kind::Array { elem, count } => {
            push_name(types, *elem, s, g);
            if *count == 0 {
                s.push_str("[]");
            } else {
                s.push('[');
                s.push_str(&count.to_string());
                s.push(']');
            }
        }
        Kind::Qualified { qualifier, target } => {
            // pahole ends a qualified name with a space, hence its `const char  *`.
            if matches!(types.get(*target).kind, Kind::Pointer { .. }) {
                push_name(types, *target, s, g);
                s.push(' ');
                s.push_str(qualifier.keyword());
                s.push(' ');
            } else {
                s.push_str(qualifier.keyword());
                s.push(' ');
                push_name(types, *target, s, g);
                s.push(' ');
            }
        }
        Kind::TypeTag { target, .. } => push_name(types, *target, s, g),
        Kind::FuncProto {
            ret,
            params,
            variadic,
        } => {
            push_name(types, *ret, s, g);
            s.push(' ');
            push_params(types, params, *variadic, s, g);
        }
    }
}

fn tagged(s: &mut String, keyword: &str, name: &str) {
    s.push_str(keyword);
    s.push(' ');
    s.push_str(if name.is_empty() { "{...}" } else { name });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Composite, Qualifier, Type};

    fn ty(t: &mut Types<'static>, name: &'static str, kind: Kind<'static>) -> TypeId {
        t.push(Type { name, kind })
    }

    #[test]
    fn spells_types_like_pahole() {
        let mut t = Types::new(8);
        let ul = ty(
            &mut t,
            "long unsigned int",
            Kind::Int {
                size: 8,
                signed: false,
                is_char: false,
                is_bool: false,
            },
        );
        let ch = ty(
            &mut t,
            "char",
            Kind::Int {
                size: 1,
                signed: true,
                is_char: true,
                is_bool: false,
            },
        );
        let lh = ty(
            &mut t,
            "list_head",
            Kind::Struct(Composite {
                size: 16,
                members: vec![],
                declared_align: None,
                is_declaration: false,
                origin: None,
            }),
        );
        let p_lh = ty(&mut t, "", Kind::Pointer { target: lh });
        let pp_lh = ty(&mut t, "", Kind::Pointer { target: p_lh });
        let c_ch = ty(
            &mut t,
            "",
            Kind::Qualified {
                qualifier: Qualifier::Const,
                target: ch,
            },
        );
        let p_c_ch = ty(&mut t, "", Kind::Pointer { target: c_ch });
        let arr = ty(
            &mut t,
            "",
            Kind::Array {
                elem: ul,
                count: 16,
            },
        );
        let arr2 = ty(
            &mut t,
            "",
            Kind::Array {
                elem: arr,
                count: 2,
            },
        );
        let flex = ty(&mut t, "", Kind::Array { elem: ch, count: 0 });
        let proto = ty(
            &mut t,
            "",
            Kind::FuncProto {
                ret: 0,
                params: vec![p_lh, ul],
                variadic: false,
            },
        );
        let fp = ty(&mut t, "", Kind::Pointer { target: proto });

        assert_eq!(type_name(&t, pp_lh), "struct list_head * *");
        assert_eq!(type_name(&t, p_c_ch), "const char  *");
        let d = member_decl(&t, arr2, "bitmap");
        assert_eq!(
            (d.type_part.as_str(), d.declarator.as_str()),
            ("long unsigned int", "bitmap[2][16]")
        );
        let d = member_decl(&t, flex, "__data");
        assert_eq!(d.declarator, "__data[]");
        let d = member_decl(&t, fp, "func");
        assert_eq!(d.type_part, "void");
        assert_eq!(
            d.declarator,
            "(*func)(struct list_head *, long unsigned int)"
        );
    }
}
