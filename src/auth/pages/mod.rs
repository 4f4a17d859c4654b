//! The auth pages: sign-in, setup, the account page and the user menu (`sign_in`), and
//! the admins' Users page (`users`).

pub mod sign_in;
pub mod tokens;
pub mod users;
