//! Roles, the caller, and what the Users page shows, as both builds (de)serialize them.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// What an account may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Finance: everything — users, teams, budgets, approvals, enforcement.
    Admin,
    /// Owner of one or more teams: reads everything, edits its own teams' budgets.
    Lead,
    /// Reads everything, changes nothing.
    Viewer,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Admin, Role::Lead, Role::Viewer];

    /// The value stored in `accounts.role` and sent by forms.
    pub fn key(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Lead => "lead",
            Role::Viewer => "viewer",
        }
    }

    pub fn parse(text: &str) -> Result<Role, AppError> {
        Role::ALL
            .into_iter()
            .find(|r| r.key() == text)
            .ok_or_else(|| AppError::invalid("role", "expected admin, lead or viewer"))
    }
}

/// The signed-in account making a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    pub account_id: i64,
    pub email: String,
    pub display_name: String,
    pub role: Role,
    /// Teams whose owners list this account's email: the teams a lead may edit.
    pub team_ids: Vec<i64>,
}

impl Caller {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }

    /// Admins edit every team; leads only the teams they own.
    pub fn can_edit_team(&self, team_id: i64) -> bool {
        self.is_admin() || (self.role == Role::Lead && self.team_ids.contains(&team_id))
    }
}

/// One account as the Users page lists it (never its password hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountSummary {
    pub id: i64,
    pub email: String,
    pub display_name: String,
    pub role: Role,
    pub created_at: String,
    pub disabled: bool,
}

/// One API token as its account page and `burnrate token list` show it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSummary {
    pub id: i64,
    /// The account it acts as.
    pub email: String,
    pub name: String,
    /// The secret's first characters, to tell tokens apart.
    pub hint: String,
    pub role: Role,
    /// The one team it is limited to.
    pub team: Option<String>,
    pub service: bool,
    pub created_by: String,
    pub created_at: String,
    pub expires_at: String,
    pub last_used_at: Option<String>,
    /// Neither revoked nor expired.
    pub live: bool,
    pub revoked: bool,
}

impl TokenSummary {
    /// `live`, `revoked` or `expired`.
    pub fn state(&self) -> &'static str {
        if self.revoked {
            "revoked"
        } else if self.live {
            "live"
        } else {
            "expired"
        }
    }
}
