curl -sS -L --max-redirs 5 'https://app.example/login' \
  -d 'username=ann' -d 'password=hunter2' -d 'remember=on'
