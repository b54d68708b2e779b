"""MediaPipe Tasks on gpulite (issue 22): model assets (``bundle``); the tasks come with the package skeleton."""
