SET session_timezone = 'America/New_York';
