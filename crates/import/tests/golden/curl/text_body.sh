curl https://api.example/notes -H 'Content-Type: text/plain' -d 'a note with a / and ${not_a_var}'
curl -I https://api.example/health
curl https://api.example/legacy -d 'path=/a/b&token=t/o k'
