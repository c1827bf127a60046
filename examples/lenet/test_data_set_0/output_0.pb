
BprobabilitiesJ(kВ=—зЎ=д4Г=Rћ=ЌТ±=Тиљ=·«>"З>owД=€_м=