//! The enforcement pages: `/approvals` (`approvals`), `/enforcement` with the flag badge
//! (`enforcement`), and the policy form it shows (`policy_form`).

pub mod approvals;
pub mod enforcement;
pub mod policy_form;
