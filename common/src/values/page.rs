//! A page of a list, as every listing route reads and answers it: `limit`
//! rows ([`Limit`], 1 to the route's bound, a default when left out)
//! strictly past `cursor` (the previous page's `nextCursor`, a
//! [`super::Cursor`] answered with `error::CURSOR_INVALID`), then the rows
//! and the cursor to go on from ([`Page`]).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

use super::field::{Bounded, Field, Named, Origin};
use crate::error::{self, ApiError, Problem};

/// How many rows a page holds: 1 to `MAX`. A wrong value is answered with
/// the sentence that names `MAX` ([`Limit::INVALID`]), so a route that
/// takes 100 rows cannot answer "from 1 to 50".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit<const MAX: i64>(Bounded<1, MAX>);

impl<const MAX: i64> Limit<MAX> {
    /// A bound no sentence names does not compile.
    pub const INVALID: Problem = match MAX {
        50 => error::LIMIT_TO_50_INVALID,
        100 => error::LIMIT_TO_100_INVALID,
        _ => panic!("no sentence names this page size: add one to the error catalogue"),
    };

    pub fn get(self) -> i64 {
        self.0.get()
    }

    /// The rows a page asks for: `limit`, else `default`.
    pub fn rows(limit: Option<Self>, default: i64) -> usize {
        limit.map_or(default, Self::get) as usize
    }
}

/// What a wrong [`Limit`] is answered with: its own sentence, so an input
/// names no problem for it.
#[derive(Debug, Clone, Copy, Default)]
pub struct OwnProblem<const MAX: i64>;

impl<const MAX: i64> Named for OwnProblem<MAX> {
    fn name(&self, into: &mut Vec<Problem>) {
        into.push(Limit::<MAX>::INVALID);
    }
}

impl<const MAX: i64> Field for Limit<MAX> {
    type Problems = OwnProblem<MAX>;
    fn read(value: &Value, origin: Origin, _: OwnProblem<MAX>) -> Result<Option<Self>, ApiError> {
        Ok(Bounded::read(value, origin, Self::INVALID)?.map(Limit))
    }
}

/// The schema of the integers it takes (`Integer1To50`).
impl<const MAX: i64> JsonSchema for Limit<MAX> {
    fn schema_name() -> Cow<'static, str> {
        <Bounded<1, MAX>>::schema_name()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        <Bounded<1, MAX>>::json_schema(generator)
    }
}

/// One page: its rows, and while more follow, where the next starts (the
/// sort key of its last row, which the route answers as `nextCursor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// The first `limit` of `items` (already in the list's order), and the
    /// last one's cursor when more were there.
    pub fn first(mut items: Vec<T>, limit: usize, cursor_of: impl Fn(&T) -> String) -> Page<T> {
        let more = items.len() > limit;
        items.truncate(limit);
        let next_cursor = items.last().filter(|_| more).map(cursor_of);
        Page { items, next_cursor }
    }

    /// The same page, each row turned into what the route answers.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }

    /// [`Page::map`] with a turn that may fail.
    pub fn try_map<U, E>(self, f: impl FnMut(T) -> Result<U, E>) -> Result<Page<U>, E> {
        Ok(Page {
            items: self.items.into_iter().map(f).collect::<Result<_, _>>()?,
            next_cursor: self.next_cursor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_page_names_its_last_row_only_when_more_follow() {
        let page = Page::first(vec![5, 4, 3], 2, |n| n.to_string());
        assert_eq!((page.items, page.next_cursor), (vec![5, 4], Some("4".into())));
        let page = Page::first(vec![5, 4], 2, |n| n.to_string());
        assert_eq!((page.items, page.next_cursor), (vec![5, 4], None));
        let page = Page::first(vec![5], 0, |n: &i32| n.to_string());
        assert_eq!((page.items, page.next_cursor), (Vec::new(), None));
    }

    #[test]
    fn a_limit_names_its_own_range() {
        let read = |v: Value| <Limit<100>>::read(&v, Origin::Body, OwnProblem);
        assert_eq!(read(100.into()).unwrap().map(Limit::get), Some(100));
        assert!(read(101.into()).unwrap_err().is(error::LIMIT_TO_100_INVALID));
        let read = |v: Value| <Limit<50>>::read(&v, Origin::Query, OwnProblem);
        assert!(read("51".into()).unwrap_err().is(error::LIMIT_TO_50_INVALID));
        assert_eq!(Limit::rows(read("7".into()).unwrap(), 25), 7);
        assert_eq!(<Limit<50>>::rows(None, 25), 25);
        assert_eq!(<Limit<50>>::schema_name(), "Integer1To50");
    }
}
