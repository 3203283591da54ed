"""`campaign review`: what a change does to the campaign, read from two trees."""
