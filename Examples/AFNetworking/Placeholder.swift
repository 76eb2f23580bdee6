// WORK IN PROGRESS: replaced before landing.
