//! The enforcement pages: `/approvals` (`approvals`) with its requests (`requests`), `/enforcement` with the flag badge
//! (`enforcement`), the policy form it shows (`policy_form`) and each resource stop's
//! resources (`stop_resources`), and a stop's snooze (`snooze`).

pub mod approvals;
pub mod enforcement;
pub mod policy_form;
pub mod requests;
pub mod snooze;
pub mod stop_resources;
