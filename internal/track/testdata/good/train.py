print('reference')
