//! Serde types that never refuse a shape: each records what it found
//! (a string, an object, a list, or "something else") so a format's one
//! typed reader can be deserialized from a line of text (`check`'s fast
//! path) or from a `Value` tree (everything else) and say, in its own
//! words and at its own path, what is wrong with a body, exactly as a
//! walk over the `Value` would. A strict model would fail with serde's
//! words, and a body the provider's reader would name would be lost.

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Visitor methods for every JSON kind a lax type does not take: each
/// consumes the value and answers `$other`.
macro_rules! take_the_rest_as {
    ($other:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
}

/// A struct of lax fields read from an object by key (any other key is
/// passed over, a later duplicate replaces an earlier one):
/// `lax_object! { struct Call<'a> { "name" => name: LaxStr<'a>, } }`.
macro_rules! lax_object {
    // The reading both forms share: each known key into its field.
    (@read $name:ident, $map:ident, $($key:literal => $field:ident),*) => {{
        let mut map = $map;
        let mut out = $name::default();
        while let Some(key) = map.next_key::<$crate::lax::LaxStr>()? {
            match key.as_deref() {
                $(Some($key) => out.$field = map.next_value()?,)*
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }};
    ($(#[$doc:meta])* struct $name:ident<$a:lifetime> { $($key:literal => $field:ident: $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Default)]
        pub(crate) struct $name<$a> {
            $(pub(crate) $field: $ty,)*
        }

        impl<'de: $a, $a> $crate::lax::FromMap<'de> for $name<$a> {
            fn from_map<M: serde::de::MapAccess<'de>>(map: M) -> Result<Self, M::Error> {
                $crate::lax::lax_object!(@read $name, map, $($key => $field),*)
            }
        }
    };
    // The same, for a struct that borrows nothing.
    ($(#[$doc:meta])* struct $name:ident { $($key:literal => $field:ident: $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Default)]
        pub(crate) struct $name {
            $(pub(crate) $field: $ty,)*
        }

        impl<'de> $crate::lax::FromMap<'de> for $name {
            fn from_map<M: serde::de::MapAccess<'de>>(map: M) -> Result<Self, M::Error> {
                $crate::lax::lax_object!(@read $name, map, $($key => $field),*)
            }
        }
    };
}
pub(crate) use lax_object;

/// Visitor methods for a string, borrowed from the text when it can be:
/// each answers `$wrap(Cow<str>)`.
macro_rules! take_strings_as {
    ($wrap:expr) => {
        fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
            Ok($wrap(std::borrow::Cow::Borrowed(s)))
        }
        fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
            Ok($wrap(std::borrow::Cow::Owned(s.to_string())))
        }
        fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
            Ok($wrap(std::borrow::Cow::Owned(s)))
        }
    };
}
pub(crate) use take_strings_as;

/// Drains what is left of a list.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Drains what is left of an object.
pub(crate) fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A field that should be a string: `None` when it is another kind
/// (`null` included), as `Value::as_str` answers.
#[derive(Default, Debug, Clone)]
pub(crate) struct LaxStr<'a>(pub Option<Cow<'a, str>>);

impl LaxStr<'_> {
    pub(crate) fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The string owned, to outlive the text it was read from.
    pub(crate) fn into_owned(self) -> LaxStr<'static> {
        LaxStr(self.0.map(|s| Cow::Owned(s.into_owned())))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LaxStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Visit<'a> {
            type Value = LaxStr<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            take_strings_as!(|s| LaxStr(Some(s)));
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq).map(|()| LaxStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map).map(|()| LaxStr(None))
            }
            take_the_rest_as!(LaxStr(None));
        }
        d.deserialize_any(Visit(PhantomData))
    }
}

/// A field that counts only when it is `true` (`Value::as_bool` of it,
/// `false` otherwise): one byte where a `Value` would take 32.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct IsTrue(pub bool);

impl<'de> Deserialize<'de> for IsTrue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = IsTrue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
                Ok(IsTrue(b))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(IsTrue(false))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(IsTrue(false))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(IsTrue(false))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(IsTrue(false))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(IsTrue(false))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(IsTrue(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq).map(|()| IsTrue(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map).map(|()| IsTrue(false))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// A field that counts only when it is a list of at least one element.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct NonEmptyList(pub bool);

impl<'de> Deserialize<'de> for NonEmptyList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = NonEmptyList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let any = seq.next_element::<IgnoredAny>()?.is_some();
                drain_seq(seq).map(|()| NonEmptyList(any))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map).map(|()| NonEmptyList(false))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(NonEmptyList(false))
            }
            take_the_rest_as!(NonEmptyList(false));
        }
        d.deserialize_any(Visit)
    }
}

/// A field that should be a list of `T`: `None` when it is another kind.
/// `T` must itself take any value (a lax type), or one odd element fails
/// the whole body.
pub(crate) struct LaxList<T>(pub Option<Vec<T>>);

impl<T> Default for LaxList<T> {
    fn default() -> Self {
        LaxList(None)
    }
}

impl<T> LaxList<T> {
    /// The elements of a list.
    pub(crate) fn visit<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<T>, A::Error>
    where
        T: Deserialize<'de>,
    {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(items)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LaxList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Visit<T> {
            type Value = LaxList<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                LaxList::visit(seq).map(|items| LaxList(Some(items)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map).map(|()| LaxList(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LaxList(None))
            }
            take_the_rest_as!(LaxList(None));
        }
        d.deserialize_any(Visit(PhantomData))
    }
}

/// An object read by hand, key by key: what [`Lax`] holds.
pub(crate) trait FromMap<'de>: Sized {
    /// Reads the object's entries; a later duplicate key replaces an
    /// earlier one, as it does in a `Value`.
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

/// A field that should be an object read as `T`: `Other` when it is
/// another kind.
pub(crate) enum Lax<T> {
    Object(T),
    Other,
}

impl<T> Lax<T> {
    pub(crate) fn object(self) -> Option<T> {
        match self {
            Lax::Object(t) => Some(t),
            Lax::Other => None,
        }
    }
}

impl<'de, T: FromMap<'de>> Deserialize<'de> for Lax<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(PhantomData<T>);
        impl<'de, T: FromMap<'de>> Visitor<'de> for Visit<T> {
            type Value = Lax<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::from_map(map).map(Lax::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq).map(|()| Lax::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Lax::Other)
            }
            take_the_rest_as!(Lax::Other);
        }
        d.deserialize_any(Visit(PhantomData))
    }
}

/// A text field: a string, or parts whose `text` strings are joined (a
/// part that is not an object, or whose `text` is not a string, adds
/// nothing), as `read::joined_text` reads a `Value`. Any other kind is
/// no text at all.
#[derive(Default, Debug, Clone)]
pub(crate) enum Texts<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Option<Cow<'a, str>>>),
    #[default]
    Other,
}

impl Texts<'_> {
    /// The texts owned, to outlive the text they were read from.
    pub(crate) fn into_owned(self) -> Texts<'static> {
        match self {
            Texts::Text(text) => Texts::Text(Cow::Owned(text.into_owned())),
            Texts::Parts(parts) => Texts::Parts(
                parts
                    .into_iter()
                    .map(|p| p.map(|p| Cow::Owned(p.into_owned())))
                    .collect(),
            ),
            Texts::Other => Texts::Other,
        }
    }

    /// The text, parts joined with `sep`.
    pub(crate) fn joined(self, sep: &str) -> Option<String> {
        match self {
            Texts::Text(text) => Some(text.into_owned()),
            Texts::Parts(parts) => Some(
                parts
                    .iter()
                    .flatten()
                    .map(|p| &**p)
                    .collect::<Vec<_>>()
                    .join(sep),
            ),
            Texts::Other => None,
        }
    }
}

/// A part of [`Texts`]: its `text`, when it is an object with one.
struct PartText<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> FromMap<'de> for PartText<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut text = None;
        while let Some(key) = map.next_key::<LaxStr>()? {
            match key.as_deref() {
                Some("text") => text = map.next_value::<LaxStr>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(PartText(text))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Texts<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Visit<'a> {
            type Value = Texts<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            take_strings_as!(Texts::Text);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element::<Lax<PartText>>()? {
                    parts.push(part.object().and_then(|p| p.0));
                }
                Ok(Texts::Parts(parts))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map).map(|()| Texts::Other)
            }
            take_the_rest_as!(Texts::Other);
        }
        d.deserialize_any(Visit(PhantomData))
    }
}

/// A field that takes a list of objects or one object for a list of one
/// (Gemini's `contents` and `parts`); `Other` when it is another kind.
pub(crate) enum OneOrList<T> {
    List(Vec<Lax<T>>),
    One(T),
    Other,
}

impl<T> OneOrList<T> {
    /// The list, one object as a list of one; `None` for another kind.
    pub(crate) fn into_list(self) -> Option<Vec<Lax<T>>> {
        match self {
            OneOrList::List(items) => Some(items),
            OneOrList::One(one) => Some(vec![Lax::Object(one)]),
            OneOrList::Other => None,
        }
    }
}

impl<'de, T: FromMap<'de>> Deserialize<'de> for OneOrList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(PhantomData<T>);
        impl<'de, T: FromMap<'de>> Visitor<'de> for Visit<T> {
            type Value = OneOrList<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                LaxList::visit(seq).map(OneOrList::List)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::from_map(map).map(OneOrList::One)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(OneOrList::Other)
            }
            take_the_rest_as!(OneOrList::Other);
        }
        d.deserialize_any(Visit(PhantomData))
    }
}

/// Deserializes an object as `T` by [`FromMap`], and any other kind as
/// `T::default()`: for the types read by the thousand (messages, blocks),
/// where a reader treats "not an object" as "an object with none of the
/// fields", so no [`Lax`] wrapper (and no copy of `T` into it) is needed.
pub(crate) fn object_or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromMap<'de> + Default,
{
    struct Visit<T>(PhantomData<T>);
    impl<'de, T: FromMap<'de> + Default> Visitor<'de> for Visit<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::from_map(map)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq).map(|()| T::default())
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(T::default())
        }
        take_the_rest_as!(T::default());
    }
    d.deserialize_any(Visit(PhantomData))
}

/// A field that is a string or a list of `T` (Responses' `input`);
/// `Other` when it is another kind.
pub(crate) enum TextOrList<'a, T> {
    Text(Cow<'a, str>),
    List(Vec<T>),
    Other,
}

impl<'de: 'a, 'a, T: Deserialize<'de>> Deserialize<'de> for TextOrList<'a, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a, T>(PhantomData<(&'a (), T)>);
        impl<'de: 'a, 'a, T: Deserialize<'de>> Visitor<'de> for Visit<'a, T> {
            type Value = TextOrList<'a, T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            take_strings_as!(TextOrList::Text);
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                LaxList::visit(seq).map(TextOrList::List)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map).map(|()| TextOrList::Other)
            }
            take_the_rest_as!(TextOrList::Other);
        }
        d.deserialize_any(Visit(PhantomData))
    }
}

/// A field read into a `Value`, boxed: a `Value` inline is 72 bytes, and
/// the structs holding these are moved a few times between the text and
/// the conversation.
#[derive(Default, Debug, Clone)]
pub(crate) struct Boxed(pub Option<Box<serde_json::Value>>);

impl Boxed {
    /// The value, `null` when absent.
    pub(crate) fn or_null(self) -> serde_json::Value {
        self.0.map_or(serde_json::Value::Null, |v| *v)
    }
}

impl<'de> Deserialize<'de> for Boxed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(d).map(|v| Boxed(Some(Box::new(v))))
    }
}

/// A field usually given as a string (arguments, a result, a message's
/// text) and sometimes as anything else: the string is borrowed from the
/// line, anything else boxed, so the struct holding it stays small (it
/// is moved a few times between the text and the conversation).
#[derive(Default, Debug, Clone)]
pub(crate) enum StrOrValue<'a> {
    #[default]
    Absent,
    Str(Cow<'a, str>),
    Value(Box<serde_json::Value>),
}

impl StrOrValue<'_> {
    /// The string owned, to outlive the text it was read from.
    pub(crate) fn into_owned(self) -> StrOrValue<'static> {
        match self {
            StrOrValue::Absent => StrOrValue::Absent,
            StrOrValue::Str(s) => StrOrValue::Str(Cow::Owned(s.into_owned())),
            StrOrValue::Value(v) => StrOrValue::Value(v),
        }
    }

    /// The value as a `Value` tree (`None` when absent).
    pub(crate) fn into_value(self) -> Option<serde_json::Value> {
        match self {
            StrOrValue::Absent => None,
            StrOrValue::Str(s) => Some(serde_json::Value::String(s.into_owned())),
            StrOrValue::Value(v) => Some(*v),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StrOrValue<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
        use serde_json::Value;
        struct Visit<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Visit<'a> {
            type Value = StrOrValue<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            take_strings_as!(StrOrValue::Str);
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let v = Value::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(StrOrValue::Value(Box::new(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let v = Value::deserialize(MapAccessDeserializer::new(map))?;
                Ok(StrOrValue::Value(Box::new(v)))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Box::new(Value::Bool(b))))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Box::new(Value::from(n))))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Box::new(Value::from(n))))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Box::new(Value::from(n))))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Box::new(Value::Null)))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Box::new(Value::Null)))
            }
        }
        d.deserialize_any(Visit(PhantomData))
    }
}

/// A field given with any value, `null` included: an `Option` field
/// would take `null` for absent, and a `Value` walk tells them apart.
#[derive(Debug, Clone)]
pub(crate) struct Given<T>(pub Option<T>);

impl<T> Default for Given<T> {
    fn default() -> Self {
        Given(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Given<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|v| Given(Some(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[derive(Default)]
    struct Pair<'a> {
        name: LaxStr<'a>,
        items: LaxList<LaxStr<'a>>,
        keys: usize,
    }

    impl<'de: 'a, 'a> FromMap<'de> for Pair<'a> {
        fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
            let mut pair = Pair::default();
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                pair.keys += 1;
                match &*key {
                    "name" => pair.name = map.next_value()?,
                    "items" => pair.items = map.next_value()?,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(pair)
        }
    }

    fn both(text: &str) -> [Lax<Pair<'_>>; 2] {
        let from_text: Lax<Pair> = serde_json::from_str(text).expect("lax takes any JSON");
        let doc: Value = serde_json::from_str(text).unwrap();
        let from_value = Lax::<Pair>::deserialize(doc).expect("lax takes any Value");
        [from_text, from_value]
    }

    #[test]
    fn every_kind_of_value_is_taken_and_named_as_what_it_is() {
        for odd in ["1", "-1", "1.5", "true", "null", "\"s\"", "[1,{\"a\":[]}]"] {
            for read in both(odd) {
                assert!(read.object().is_none(), "{odd}");
            }
        }
        let text =
            json!({"name": "a\"b", "items": ["x", 1, null, {"y": 2}], "z": [[{}]]}).to_string();
        for read in both(&text) {
            let pair = read.object().expect("an object");
            assert_eq!(pair.name.as_deref(), Some("a\"b"));
            let items: Vec<_> = pair.items.0.unwrap().iter().map(|s| s.0.clone()).collect();
            assert_eq!(items, [Some("x".into()), None, None, None]);
            assert_eq!(pair.keys, 3);
        }
        for odd in [
            json!({"name": 1, "items": "x"}),
            json!({"name": {}, "items": {}}),
        ] {
            for read in both(&odd.to_string()) {
                let pair = read.object().expect("an object");
                assert!(pair.name.0.is_none() && pair.items.0.is_none());
            }
        }
    }
}

/// A field of a JSON object found by comparing its keys in order, where
/// the object is small (a log record's own fields): `Value::get` hashes
/// the key with SipHash for every lookup (`serde_json`'s ordered map), which
/// was a tenth of reading a Gemini CLI chat, looked up a few times per
/// record. A larger object is looked up by its hash as before.
pub(crate) trait Field {
    /// The field `key`, when this is an object that has it.
    fn field(&self, key: &str) -> Option<&Value>;
    /// [`Field::field`], to change or take.
    fn field_mut(&mut self, key: &str) -> Option<&mut Value>;
}

/// Up to how many keys an object is scanned rather than hashed.
const SCANNED_UP_TO: usize = 16;

impl Field for Value {
    fn field(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(map) if map.len() <= SCANNED_UP_TO => {
                map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
            }
            Value::Object(map) => map.get(key),
            _ => None,
        }
    }

    fn field_mut(&mut self, key: &str) -> Option<&mut Value> {
        let Value::Object(map) = self else {
            return None;
        };
        if map.len() > SCANNED_UP_TO {
            return map.get_mut(key);
        }
        map.iter_mut()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
    }
}

#[cfg(test)]
mod field_tests {
    use super::Field;
    use serde_json::json;

    /// A field found by scanning is the one `Value::get` finds, small or
    /// large, present or not, and on what is not an object.
    #[test]
    fn a_field_is_what_get_finds() {
        let large: serde_json::Map<String, serde_json::Value> =
            (0..40).map(|k| (format!("k{k}"), json!(k))).collect();
        for mut value in [
            json!({"type": "gemini", "id": "a", "content": [1]}),
            serde_json::Value::Object(large),
            json!([1, 2]),
            json!("type"),
        ] {
            for key in ["type", "id", "content", "k3", "k39", "missing"] {
                assert_eq!(value.field(key), value.get(key), "{key}");
                let expected = value.get(key).cloned();
                assert_eq!(value.field_mut(key).map(|v| v.clone()), expected);
            }
        }
    }
}
